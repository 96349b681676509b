//! The Rust `kafka-protocol` crate decoding kcodec's benchmark payloads (benchmarks/native/README.md).
//!
//!     anchor DIR ROUNDS        time every case: ROUNDS calls each (after one warm-up), JSON on stdout
//!     anchor DIR once CASE     one warm-up call, then one call inside `kcb_measure` (callgrind counts it)
//!
//! Each timed call is the decode plus dropping its result, as kcodec's figures are.
use std::time::Instant;
use std::{env, fs, hint::black_box, path::Path};

use bytes::Bytes;
use kafka_protocol::messages::MetadataResponse;
use kafka_protocol::protocol::Decodable;
use kafka_protocol::records::RecordBatchDecoder;

const CASES: [&str; 3] = ["metadata_v12_1k", "metadata_v12_10k", "records_1k_none"];

fn decode(case: &str, data: &Bytes) -> usize {
    let mut buf = data.clone(); // a reference count, not a copy
    if case.starts_with("metadata") {
        let m = MetadataResponse::decode(&mut buf, 12).expect("metadata decodes");
        m.topics.len()
    } else {
        let set = RecordBatchDecoder::decode(&mut buf).expect("batch decodes");
        set.records.iter().map(|r| r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len())).sum()
    }
}

/// The measured call: callgrind's --toggle-collect names this symbol.
#[no_mangle]
#[inline(never)]
pub fn kcb_measure(case: &str, data: &Bytes) -> usize {
    black_box(decode(case, data))
}

fn main() {
    let args: Vec<String> = env::args().collect();
    let dir = Path::new(&args[1]);
    let load = |case: &str| Bytes::from(fs::read(dir.join(format!("{case}.bin"))).expect("payload file"));
    if args[2] == "once" {
        let data = load(&args[3]);
        black_box(decode(&args[3], &data));
        println!("{}", kcb_measure(&args[3], &data));
        return;
    }
    let rounds: usize = args[2].parse().expect("rounds");
    let mut out = Vec::new();
    for case in CASES {
        let data = load(case);
        black_box(decode(case, &data));
        let samples: Vec<String> = (0..rounds)
            .map(|_| {
                let t = Instant::now();
                black_box(decode(case, &data));
                format!("{:e}", t.elapsed().as_secs_f64())
            })
            .collect();
        out.push(format!("\"{case}\": [{}]", samples.join(", ")));
    }
    println!("{{{}}}", out.join(", "));
}
