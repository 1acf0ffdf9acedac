use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::plan::{DependencyGraph, Direction};
use crate::template::Template;

/// A graph from `(id, depends_on)` pairs.
fn graph(nodes: &[(&str, &[&str])]) -> DependencyGraph {
    let resources: serde_json::Map<String, serde_json::Value> = nodes
        .iter()
        .map(|(id, deps)| {
            (
                id.to_string(),
                json!({"Type": "AWS::SQS::Queue", "DependsOn": deps}),
            )
        })
        .collect();
    let template = Template::from_value(json!({ "Resources": resources }), Path::new("t.json"))
        .expect("template");
    DependencyGraph::from_template_all("S", &template).expect("graph")
}

/// Records start and end times (in ticks of a shared counter) and the peak concurrency.
#[derive(Default)]
struct Log {
    order: Mutex<Vec<String>>,
    running: AtomicUsize,
    peak: AtomicUsize,
}

async fn run(
    g: &DependencyGraph,
    direction: Direction,
    concurrency: usize,
    delays: HashMap<&'static str, u64>,
    failing: &'static [&'static str],
) -> (WalkOutcome<(), String>, Arc<Log>) {
    let log = Arc::new(Log::default());
    let delays = Arc::new(
        delays
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<HashMap<_, _>>(),
    );
    let work_log = log.clone();
    let outcome = walk(
        g.ready_tracker(direction),
        WalkOptions {
            concurrency,
            ..Default::default()
        },
        move |id| {
            let log = work_log.clone();
            let delay = delays.get(&id).copied().unwrap_or(5);
            async move {
                let now = log.running.fetch_add(1, Ordering::SeqCst) + 1;
                log.peak.fetch_max(now, Ordering::SeqCst);
                log.order.lock().expect("lock").push(format!("start {id}"));
                tokio::time::sleep(Duration::from_millis(delay)).await;
                log.order.lock().expect("lock").push(format!("end {id}"));
                log.running.fetch_sub(1, Ordering::SeqCst);
                if failing.contains(&id.as_str()) {
                    Err(format!("{id} failed"))
                } else {
                    Ok(())
                }
            }
        },
    )
    .await;
    (outcome, log)
}

fn position(log: &Log, event: &str) -> usize {
    log.order
        .lock()
        .expect("lock")
        .iter()
        .position(|e| e == event)
        .unwrap_or_else(|| panic!("{event} never happened"))
}

#[tokio::test]
async fn dependents_start_only_after_their_dependencies() {
    let g = graph(&[("A", &[]), ("B", &["A"]), ("C", &["B"]), ("D", &["A"])]);
    let (outcome, log) = run(&g, Direction::Deploy, 10, HashMap::new(), &[]).await;
    assert!(outcome.is_success());
    assert_eq!(outcome.completed.len(), 4);
    assert!(position(&log, "end A") < position(&log, "start B"));
    assert!(position(&log, "end B") < position(&log, "start C"));
    assert!(position(&log, "end A") < position(&log, "start D"));
}

#[tokio::test]
async fn deletes_walk_in_reverse() {
    let g = graph(&[("A", &[]), ("B", &["A"])]);
    let (outcome, log) = run(&g, Direction::Delete, 10, HashMap::new(), &[]).await;
    assert!(outcome.is_success());
    assert!(position(&log, "end B") < position(&log, "start A"));
}

#[tokio::test]
async fn no_level_barrier_a_ready_node_does_not_wait_for_an_unrelated_slow_one() {
    // S is slow and unrelated; B depends only on the fast A and must start while S runs.
    let g = graph(&[("S", &[]), ("A", &[]), ("B", &["A"])]);
    let delays = HashMap::from([("S", 300), ("A", 5), ("B", 5)]);
    let (outcome, log) = run(&g, Direction::Deploy, 10, delays, &[]).await;
    assert!(outcome.is_success());
    assert!(position(&log, "end B") < position(&log, "end S"));
}

#[tokio::test]
async fn concurrency_is_bounded() {
    let nodes: Vec<(String, Vec<&str>)> = (0..12).map(|i| (format!("N{i}"), vec![])).collect();
    let refs: Vec<(&str, &[&str])> = nodes
        .iter()
        .map(|(id, d)| (id.as_str(), d.as_slice()))
        .collect();
    let g = graph(&refs);
    let (outcome, log) = run(&g, Direction::Deploy, 3, HashMap::new(), &[]).await;
    assert_eq!(outcome.completed.len(), 12);
    assert_eq!(log.peak.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_failure_skips_its_dependents_and_spares_independent_branches() {
    let g = graph(&[
        ("A", &[]),
        ("B", &["A"]),
        ("C", &["B"]),
        ("X", &[]),
        ("Y", &["X"]),
    ]);
    let (outcome, _) = run(&g, Direction::Deploy, 10, HashMap::new(), &["A"]).await;
    assert_eq!(outcome.failed.len(), 1);
    assert_eq!(outcome.failed[0].0, "A");
    let mut skipped = outcome.skipped.clone();
    skipped.sort();
    assert_eq!(skipped, ["B", "C"]);
    let done: Vec<&str> = outcome
        .completed
        .iter()
        .map(|(id, _)| id.as_str())
        .collect();
    assert!(done.contains(&"X") && done.contains(&"Y"));
    assert!(outcome.cancelled.is_empty());
}

#[tokio::test]
async fn cancellation_stops_new_starts_and_lets_running_work_finish() {
    let g = graph(&[("A", &[]), ("B", &["A"]), ("C", &["B"])]);
    let (tx, rx) = watch::channel(false);
    let started = Arc::new(Mutex::new(Vec::new()));
    let seen = started.clone();
    let outcome: WalkOutcome<(), String> = walk(
        g.ready_tracker(Direction::Deploy),
        WalkOptions {
            concurrency: 4,
            cancel: Some(rx),
            events: None,
        },
        move |id| {
            let seen = seen.clone();
            let tx = tx.clone();
            async move {
                seen.lock().expect("lock").push(id.clone());
                if id == "A" {
                    let _ = tx.send(true); // Ctrl-C while A runs
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(())
            }
        },
    )
    .await;
    assert_eq!(
        *started.lock().expect("lock"),
        ["A"],
        "nothing starts after cancellation"
    );
    assert_eq!(
        outcome.completed.len(),
        1,
        "A, already running, finished and is reported"
    );
    assert_eq!(outcome.cancelled, ["B", "C"]);
}

#[tokio::test]
async fn events_report_every_transition() {
    let g = graph(&[("A", &[]), ("B", &["A"])]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let _: WalkOutcome<(), String> = walk(
        g.ready_tracker(Direction::Deploy),
        WalkOptions {
            events: Some(tx),
            ..Default::default()
        },
        |id| async move {
            if id == "A" {
                Err("boom".to_owned())
            } else {
                Ok(())
            }
        },
    )
    .await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    assert_eq!(
        events,
        [
            WalkEvent::Started("A".into()),
            WalkEvent::Failed("A".into()),
            WalkEvent::Skipped("B".into())
        ]
    );
}
