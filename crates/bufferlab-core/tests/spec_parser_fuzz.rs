//! The engine's spec parser and validator under mutation (the Rust side of the spec fuzzer;
//! the Python side is tests/cli/fuzz_specs.py).
//!
//! Valid specs covering every part of the format (TCP and QUIC flows, datagram sources, every
//! queue discipline, loss models, generators, captures, record selections) are serialised to JSON
//! and mutated: a value replaced by a wrong type, a negative, fractional, zero, huge or
//! out-of-range number; a key removed or unknown; a list emptied or an element duplicated
//! (parallel links, duplicate flows). For every mutant:
//! - parsing and validation never panic, and an error names a path that exists in the document
//!   (the parser's) or in the parsed spec (the validator's), with a one-line reason;
//! - whatever validation accepts, the simulator accepts too (`plan()` validates without building
//!   it), simulates a bounded number of events, and, if it reached its end, finishes;
//! - all of it within an address-space limit, so a spec that makes the engine reserve memory in
//!   proportion to a number in it aborts the test.

mod common;

use bufferlab_core::spec::*;
use bufferlab_core::units::SimTime;
use bufferlab_core::{validate, Simulator};
use common::*;
use proptest::prelude::*;
use serde_json::{json, Value};

/// Address space the test process may use: far above what any of these small specs needs.
const ADDRESS_SPACE_LIMIT: u64 = 3 << 30;
/// Events simulated per accepted mutant: enough to start every flow and fill queues a little.
const EVENTS_PER_MUTANT: u64 = 20_000;

fn limit_memory() {
    rlimit::setrlimit(rlimit::Resource::AS, ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT)
        .expect("setting the address-space limit");
}

/// A dumbbell whose flows use every transport and traffic kind, behind a SplitBuff bottleneck.
fn mixed_dumbbell() -> ScenarioSpec {
    let mut spec = dumbbell(4, SEC, 3, 0.0);
    spec.links[0].queue_forward = QueueSpec::SplitBuff {
        limit_packets: Some(200),
        limit_bytes: None,
        sub_buffers: 2,
        update_interval_ns: 100 * MS,
        alpha: 0.25,
        quantum_bytes: 1500,
        estimator: SplitBuffEstimator::Paper,
        total: SplitBuffTotal::Estimated,
    };
    spec.links[0].loss_model = Some(LossModel::GilbertElliott { p: 0.01, r: 0.3, loss_good: 0.0, loss_bad: 0.5 });
    spec.flows[1].transport = TransportKind::Quic;
    spec.flows[1].cca = CcaKind::Cubic;
    spec.flows[2].traffic = TrafficSpec::Finite { bytes: 200_000 };
    spec.flows[2].cca = CcaKind::Bbr;
    spec.flows[3].traffic = TrafficSpec::OnOff {
        rate_bps: 5_000_000,
        packet_bytes: 1200,
        on: Distribution::Exponential { mean: 50e6 },
        off: Distribution::Uniform { low: 10e6, high: 90e6 },
    };
    spec.captures = vec![CaptureSpec { link: 0, direction: Direction::Forward }];
    spec.record = RecordSpec { flows: Some(vec![0, 1]), channels: Some(vec![0]), ..RecordSpec::default() };
    spec
}

/// Two hosts behind a token-bucket shaper, with a Poisson and a closed-loop generator.
fn generated_traffic() -> ScenarioSpec {
    let mut spec = dumbbell(1, SEC, 5, 0.001);
    spec.links[0].queue_forward = QueueSpec::Tbf { rate_bps: 50_000_000, bucket_bytes: 30_000, limit_bytes: 150_000 };
    spec.links[0].queue_backward = QueueSpec::BlindSplitBuff {
        limit_packets: None,
        limit_bytes: Some(300_000),
        sub_buffers: 3,
        quantum_bytes: 1500,
    };
    spec.flows[0].cca = CcaKind::HighSpeed;
    spec.generators = vec![
        GeneratorSpec {
            name: "mice".into(),
            src: 2,
            dst: 3,
            cca: CcaKind::Reno,
            tcp: TcpSpec { sack: false, ..TcpSpec::default() },
            start_ns: 0,
            stop_ns: Some(800 * MS),
            model: GeneratorModel::Poisson {
                rate_per_s: 50.0,
                size: Distribution::BoundedPareto { shape: 1.2, low: 1e3, high: 1e6 },
            },
        },
        GeneratorSpec {
            name: "users".into(),
            src: 2,
            dst: 3,
            cca: CcaKind::Cubic,
            tcp: TcpSpec::default(),
            start_ns: 0,
            stop_ns: None,
            model: GeneratorModel::ClosedLoop {
                users: 5,
                size: Distribution::Empirical { points: vec![(1e3, 0.0), (1e4, 0.5), (1e5, 1.0)] },
                think: Distribution::Lognormal { mu: 17.0, sigma: 1.0 },
            },
        },
    ];
    spec
}

fn base_documents() -> Vec<Value> {
    [dumbbell(2, SEC, 1, 0.0), mixed_dumbbell(), generated_traffic()]
        .iter()
        .map(|spec| serde_json::to_value(spec).unwrap())
        .collect()
}

/// One step of a path into a JSON document.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every path in the document, the root excluded, in a fixed order.
fn paths(doc: &Value) -> Vec<Vec<Step>> {
    fn walk(v: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    here.push(Step::Key(k.clone()));
                    out.push(here.clone());
                    walk(child, here, out);
                    here.pop();
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    here.push(Step::Index(i));
                    out.push(here.clone());
                    walk(child, here, out);
                    here.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, &mut Vec::new(), &mut out);
    out
}

fn at_mut<'a>(doc: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(doc, |v, step| match step {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

/// Apply mutation `kind` at the `which`-th path of the document. Most mutations keep a number a
/// number (zero, negative, fractional, huge, scaled, off by one), so that many mutants get past
/// the parser to the validator and the simulator; the rest break types and structure.
fn mutate(doc: &mut Value, which: usize, kind: u8) {
    let all = paths(doc);
    if all.is_empty() {
        return;
    }
    let path = &all[which % all.len()];
    let (parent_path, last) = path.split_at(path.len() - 1);
    let target = at_mut(doc, path);
    let number = target.as_f64();
    let replacement = match (kind % 32, number) {
        (0, _) => json!("x"),
        (1, _) => json!(true),
        (2, _) => Value::Null,
        (3, _) => json!([]),
        (4, _) => json!({}),
        (5, _) => json!(-1),
        (6, _) => json!(1e39),
        (7, _) => json!(u64::MAX),
        (8 | 9, _) => json!(0),
        (10, _) => json!(1.5),
        (11, _) => json!(1u64 << 60),
        (12, _) => json!(1_000_000),
        (13, _) => json!(2),
        (14, _) => json!(f64::MAX),
        (15 | 16, Some(x)) => scaled(target, x, 1000.0),
        (17 | 18, Some(x)) => scaled(target, x, 1e-3),
        (19 | 20, Some(x)) => scaled(target, x, 2.0),
        (21 | 22, Some(_)) => match target.as_u64() {
            Some(n) => json!(n + 1),
            None => json!(target.as_f64().unwrap() + 0.25),
        },
        (23 | 24, Some(_)) => match target.as_u64() {
            Some(n) => json!(n.saturating_sub(1)),
            None => json!(target.as_f64().unwrap() - 0.25),
        },
        (25 | 26, _) => {
            // Remove the value (a missing key, a shorter list).
            match (at_mut(doc, parent_path), &last[0]) {
                (Value::Object(map), Step::Key(k)) => {
                    map.remove(k);
                }
                (Value::Array(items), Step::Index(i)) => {
                    items.remove(*i);
                }
                _ => {}
            }
            return;
        }
        (27, _) => {
            // An unknown key beside it.
            if let Value::Object(map) = at_mut(doc, parent_path) {
                map.insert("surplus_field".into(), json!(1));
            }
            return;
        }
        (28 | 29, _) => {
            // Its list's element duplicated: parallel links, duplicate flows, nodes, captures.
            if let (Value::Array(items), Step::Index(i)) = (at_mut(doc, parent_path), &last[0]) {
                let copy = items[*i].clone();
                items.push(copy);
            }
            return;
        }
        (30, _) => {
            // Its list emptied.
            if let Value::Array(items) = at_mut(doc, parent_path) {
                items.clear();
            }
            return;
        }
        // Numeric mutations of something that is not a number, and the rest: leave it be.
        _ => return,
    };
    *at_mut(doc, path) = replacement;
}

/// `x · factor`, kept whole where `x` was.
fn scaled(target: &Value, x: f64, factor: f64) -> Value {
    if target.is_u64() {
        json!((x * factor).round().min(u64::MAX as f64) as u64)
    } else {
        json!(x * factor)
    }
}

/// The keys whose value is an index into a table of the document, and the table (spec.rs's
/// `SpecText`).
const REFERENCES: [(&str, &str); 4] =
    [("tcp", "tcp_options"), ("quic", "quic_options"), ("queue_forward", "queues"), ("queue_backward", "queues")];

/// Whether an error's field (`flows[0].tcp.mss`, `links[2]`, `spec`) is a path in `doc`. A path
/// goes through an index as through the entry it refers to (`flows[0].tcp.mss` is the `mss` of
/// the entry of `tcp_options` that `flows[0].tcp` names); a path that ends at an index names it
/// (`flows[0].tcp`: an index with no entry).
fn names_a_path_in(field: &str, doc: &Value) -> bool {
    if field == "spec" {
        return true;
    }
    let mut v = doc;
    let parts: Vec<&str> = field.split('.').collect();
    for (at, &part) in parts.iter().enumerate() {
        let last = at + 1 == parts.len();
        let (key, indices) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            let table = REFERENCES.iter().find(|(k, _)| *k == key).map(|(_, table)| *table);
            match (v.get(key), table) {
                (Some(Value::Number(_)), Some(_)) if last && indices.is_empty() => return true,
                (Some(Value::Number(n)), Some(table)) => {
                    match n.as_u64().and_then(|i| doc.get(table)?.get(usize::try_from(i).ok()?)) {
                        Some(entry) => v = entry,
                        None => return false,
                    }
                }
                (Some(child), _) => v = child,
                (None, _) => return false,
            }
        }
        for index in indices.split(['[', ']']).filter(|s| !s.is_empty()) {
            match index.parse::<usize>().ok().and_then(|i| v.get(i)) {
                Some(child) => v = child,
                None => return false,
            }
        }
    }
    true
}

fn assert_one_line_reason(reason: &str, what: &str) {
    assert!(!reason.is_empty() && !reason.contains('\n'), "{what}: reason {reason:?}");
}

/// The properties above, for one mutant.
fn check_mutant(doc: &Value) {
    let text = doc.to_string();
    let spec = match ScenarioSpec::from_json(&text) {
        Err(e) => {
            assert!(names_a_path_in(&e.field, doc), "parser named {:?}, not in {text}", e.field);
            assert_one_line_reason(&e.reason, &e.field);
            return;
        }
        Ok(spec) => spec,
    };
    let parsed = serde_json::to_value(&spec).unwrap();
    match validate(&spec) {
        Err(e) => {
            assert!(names_a_path_in(&e.field, &parsed), "validator named {:?}, not in {parsed}", e.field);
            assert_one_line_reason(&e.reason, &e.field);
            match Simulator::new(&spec) {
                Err(built) => assert_eq!(built, e, "the simulator refuses what validation refuses, alike"),
                Ok(_) => panic!("the simulator accepted what validation refused ({e}): {text}"),
            }
        }
        Ok(()) => {
            let mut sim = Simulator::new(&spec).unwrap_or_else(|e| panic!("validated, yet the simulator refused: {e}"));
            if let Some(true) = sim.run_until_bounded(SimTime::from_ns(u64::MAX), EVENTS_PER_MUTANT) {
                sim.finish().unwrap_or_else(|e| panic!("a finished run failed its checks: {e}"));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_specs_are_refused_with_a_named_field_or_run(
        base in 0usize..3,
        mutations in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..3),
    ) {
        limit_memory();
        let mut doc = base_documents().swap_remove(base);
        for (which, kind) in mutations {
            mutate(&mut doc, which, kind);
        }
        check_mutant(&doc);
    }
}

#[test]
fn the_unmutated_documents_parse_validate_and_run() {
    limit_memory();
    for doc in base_documents() {
        let spec = ScenarioSpec::from_json(&doc.to_string()).unwrap();
        assert_eq!(validate(&spec), Ok(()));
        check_mutant(&doc);
    }
}

#[test]
fn a_valid_document_parses_to_the_spec_it_holds_and_a_wrong_one_is_named_by_its_path() {
    // `from_json` parses a valid text directly and only a refused one again with its path
    // tracked: both must read the same spec and name the same field.
    for doc in base_documents() {
        let spec = ScenarioSpec::from_json(&doc.to_string()).unwrap();
        assert_eq!(serde_json::to_value(&spec).unwrap(), doc);
        let mut wrong = doc.clone();
        wrong["tcp_options"][0]["mss"] = json!("large");
        let e = ScenarioSpec::from_json(&wrong.to_string()).unwrap_err();
        assert_eq!(e.field, "tcp_options[0].mss");
        let mut wrong = doc.clone();
        wrong["flows"][0]["tcp"] = json!(7);
        let e = ScenarioSpec::from_json(&wrong.to_string()).unwrap_err();
        assert_eq!(e.field, "flows[0].tcp");
        assert!(e.reason.starts_with("no entry 7 in tcp_options ("), "{}", e.reason);
    }
}

#[test]
fn numbers_beyond_a_field_are_named_in_the_users_terms() {
    let mut doc = serde_json::to_value(dumbbell(1, SEC, 1, 0.0)).unwrap();
    doc["links"][0]["rate"] = json!(1e39);
    let e = ScenarioSpec::from_json(&doc.to_string()).unwrap_err();
    assert_eq!(e.field, "links[0].rate");
    assert_eq!(e.reason, "1e+39 is out of range (a whole number from 0 to 18446744073709551615)");
    doc["links"][0]["rate"] = json!(-5);
    let e = ScenarioSpec::from_json(&doc.to_string()).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.reason.as_str()),
        ("links[0].rate", "-5 is out of range (a whole number from 0 to 18446744073709551615)")
    );
}
