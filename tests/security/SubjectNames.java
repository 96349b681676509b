// Prints each PEM certificate's subject as Java's X500Principal.getName() writes it (RFC 2253): what
// Kafka's default ssl.principal.mapping.rules make a TLS client's principal from. Used by test_mtls.py.
import java.io.FileInputStream;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;

public class SubjectNames {
    public static void main(String[] args) throws Exception {
        CertificateFactory factory = CertificateFactory.getInstance("X.509");
        for (String path : args) {
            try (FileInputStream in = new FileInputStream(path)) {
                X509Certificate cert = (X509Certificate) factory.generateCertificate(in);
                System.out.println(cert.getSubjectX500Principal().getName());
            }
        }
    }
}
