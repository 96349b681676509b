"""Kafka's ssl.principal.mapping.rules: the rules' syntax (splitting, escapes, refusals) and what they
make of DNs, with the cases Kafka's own SslPrincipalMapperTest checks."""

from __future__ import annotations

import pytest

from kcodec.security.principal_rules import NoMatchingRule, PrincipalRules

SPLITTING = {  # the rules as written -> as parsed (str)
    "": "[]",
    "DEFAULT": "[DEFAULT]",
    "RULE://": "[RULE:/]",
    "RULE:/.*/L": "[RULE:/.*/L]",
    "  RULE:   /     / ,  DEFAULT  ": "[RULE:   /     , DEFAULT]",
    "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ": "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
    ",   , , ,      , , ,   ": "[]",  # empty rules are ignored
    ",,RULE://,,,DEFAULT,,": "[RULE:/, DEFAULT]",
    "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//": "[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]",  # escaped slashes stay in
    "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/": "[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]",
    "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT":
        "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
}
INVALID = ["default", "DEFAUL", "DEFAULT/L", "DEFAULT/U", "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
           "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
           "RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU"]


@pytest.mark.parametrize("text", SPLITTING)
def test_rules_split_as_kafka_splits_them(text):
    assert str(PrincipalRules(text)) == SPLITTING[text]


@pytest.mark.parametrize("text", INVALID)
def test_invalid_rules_are_refused(text):
    with pytest.raises(ValueError, match="invalid TLS principal mapping rule"):
        PrincipalRules(text)


def test_names_from_dns():
    rules = PrincipalRules(", ".join([
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT"]))
    assert rules.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert rules.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert rules.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert rules.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert rules.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"
    escaped_comma = PrincipalRules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert escaped_comma.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_replacements_as_java_reads_them():
    dn = "CN=a,OU=b"
    assert PrincipalRules("RULE:^CN=(.),OU=(.)$/$2-$1-$3-$21/").name(dn) == "b-a-$3-b1"  # $3: no such group
    assert PrincipalRules("RULE:^CN=(.),OU=(.)$/\\$1 $0/").name(dn) == "$1 CN=a,OU=b"
    assert PrincipalRules("RULE:^CN=(.)(x)?,OU=(.)$/[$2]/").name(dn) == "[]"  # a group that took no part
    assert PrincipalRules("RULE:.*/X/").name(dn) == "XX"  # replaceAll: the empty match at the end too


def test_no_rule_applies():
    with pytest.raises(NoMatchingRule, match="no TLS principal mapping rule applies to CN=x, rules "
                                             r"\[RULE:\^CN=y\$/y\]"):
        PrincipalRules("RULE:^CN=y$/y/").name("CN=x")
    with pytest.raises(NoMatchingRule):
        PrincipalRules("").name("CN=x")
    with pytest.raises(ValueError, match="bad pattern"):
        PrincipalRules("RULE:(/x/")
