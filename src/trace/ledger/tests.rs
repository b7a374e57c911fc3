//! The ledger's records, budgets and totals, tested in process.

use super::*;

#[test]
fn take_turn_stops_at_max_turns_and_takes_nothing_on_refusal() {
    let outer = Arc::new(Budget::new(None, Some(5)));
    let inner = Arc::new(Budget::new(None, Some(1)));
    let chain = [outer.clone(), inner.clone()];
    assert_eq!(take_turn(&chain), Ok(()));
    assert_eq!(take_turn(&chain), Err(Exceeded::Turns { used: 1, max: 1 }));
    // The refused request took nothing from the outer budget.
    assert_eq!(outer.turns.load(Ordering::Acquire), 1);
}

/// A request refused by one budget of its chain must never make a
/// sibling's request fail on a budget they share, not even for a moment.
#[test]
fn a_refused_turn_never_blocks_a_sibling_sharing_a_budget() {
    use std::sync::atomic::AtomicBool;
    let stop = Arc::new(AtomicBool::new(false));
    let mut false_refusals = 0;
    let rounds = 20_000;
    let shared: Arc<Mutex<Arc<Budget>>> =
        Arc::new(Mutex::new(Arc::new(Budget::new(None, Some(1)))));
    let spent = Arc::new(Budget::new(None, Some(1)));
    spent.turns.store(1, Ordering::Release);
    let spinner = {
        let (stop, shared, spent) = (stop.clone(), shared.clone(), spent.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let root = shared.lock().unwrap().clone();
                // Always refused by `spent`, after `root` in the chain.
                assert!(take_turn(&[root, spent.clone()]).is_err());
            }
        })
    };
    for _ in 0..rounds {
        let root = Arc::new(Budget::new(None, Some(1)));
        *shared.lock().unwrap() = root.clone();
        if take_turn(&[root]).is_err() {
            false_refusals += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    assert_eq!(false_refusals, 0, "of {rounds} rounds");
}

#[test]
fn take_turn_refuses_once_the_tokens_are_spent() {
    let b = [Arc::new(Budget::new(Some(100), None))];
    assert_eq!(take_turn(&b), Ok(()));
    spend_tokens(&b, 90, 9, 0);
    assert_eq!(take_turn(&b), Ok(()));
    spend_tokens(&b, 1, 1, 0);
    assert_eq!(
        take_turn(&b),
        Err(Exceeded::Tokens {
            used: 101,
            max: 100
        })
    );
    assert_eq!(
        Exceeded::Tokens {
            used: 101,
            max: 100
        }
        .to_string(),
        "token budget exceeded (used 101 of 100)"
    );
}

#[test]
fn children_are_numbered_per_name_from_one() {
    let c = Children::default();
    let root = Place::root("lead");
    assert_eq!(&*root.child("r", c.next("r")).path, "lead/r#1");
    assert_eq!(&*root.child("w", c.next("w")).path, "lead/w#1");
    let second = root.child("r", c.next("r"));
    assert_eq!(&*second.path, "lead/r#2");
    assert_eq!(&*second.child("f", 1).path, "lead/r#2/f#1");
    assert_eq!(second.child("f", 1).depth, 2);
}

#[test]
fn a_tool_detail_is_redacted_before_it_is_cut() {
    let key = "sk-ledger-straddle-0123456789";
    crate::text::redact::register(key);
    // The key starts 6 bytes before the cut: cut first, its first 6
    // characters would be left.
    let output = format!("{}{key} and more", "x".repeat(DETAIL_OUTPUT_BYTES - 6));
    let call = crate::provider::ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        ..Default::default()
    };
    let d = ToolDetail::new(&call, &output, false, 1, 0, Duration::ZERO);
    assert!(!d.output.contains("sk-led"), "{}", &d.output[4080..]);
    assert!(d.output.contains("[cut: "));
}

/// Two runs at one path (two requests served to one agent) are two runs:
/// each ends its own entry, and a turn is counted on its own.
#[test]
fn runs_at_one_path_are_told_apart_by_their_place() {
    let ledger = Ledger::new();
    let (first, second) = (Place::root("lead"), Place::root("lead"));
    ledger.record_start(&first);
    ledger.record_start(&second);
    ledger.record_turn(&first, 3);
    ledger.record_end(&first, Duration::from_millis(1), false);
    let running = ledger.running();
    assert_eq!(running.len(), 1);
    assert!(running[0].place.is(&second));
    assert_eq!(running[0].turn, 0, "the turn was the other run's");
}
