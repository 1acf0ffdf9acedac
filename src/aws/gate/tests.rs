use super::*;

fn at(base: Instant, ms: u64) -> Instant {
    base + Duration::from_millis(ms)
}

#[test]
fn admits_up_to_the_limit_then_waits_for_a_call_to_end() {
    let c = Controller::new(3);
    let now = Instant::now();
    assert_eq!(c.admit(0, now), Ok(()));
    assert_eq!(c.admit(2, now), Ok(()));
    assert_eq!(c.admit(3, now), Err(None));
    assert_eq!(Controller::default().limit(), INITIAL_LIMIT);
}

#[test]
fn a_throttle_halves_the_limit_and_pauses_new_calls() {
    let t0 = Instant::now();
    let mut c = Controller::new(64);
    c.record(Outcome::Throttled, t0, at(t0, 10));
    assert_eq!(c.limit(), 32);
    // Paused for the first backoff, even with room under the limit.
    assert_eq!(
        c.admit(0, at(t0, 20)),
        Err(Some(at(t0, 10) + FIRST_BACKOFF))
    );
    assert_eq!(c.admit(0, at(t0, 10) + FIRST_BACKOFF), Ok(()));
}

#[test]
fn the_throttles_of_one_burst_count_once() {
    let t0 = Instant::now();
    let mut c = Controller::new(64);
    // Thirty calls sent at t0; all come back throttled.
    for i in 0..30 {
        c.record(Outcome::Throttled, t0, at(t0, 10 + i));
    }
    assert_eq!(c.limit(), 32);
    // A call sent after the decrease that is throttled again: a new burst, halved again,
    // with a doubled backoff.
    let resent = at(t0, 200);
    c.record(Outcome::Throttled, resent, at(t0, 250));
    assert_eq!(c.limit(), 16);
    assert_eq!(
        c.admit(0, at(t0, 251)),
        Err(Some(at(t0, 250) + FIRST_BACKOFF * 2))
    );
}

#[test]
fn the_backoff_is_capped_and_the_limit_never_drops_below_one() {
    let t0 = Instant::now();
    let mut c = Controller::new(4);
    let mut now = t0;
    for _ in 0..40 {
        now += Duration::from_secs(10);
        c.record(Outcome::Throttled, now, now);
    }
    assert_eq!(c.limit(), FLOOR);
    assert_eq!(
        c.admit(0, now + Duration::from_millis(1)),
        Err(Some(now + MAX_BACKOFF))
    );
    assert_eq!(c.admit(0, now + MAX_BACKOFF), Ok(()));
}

#[test]
fn calm_answers_raise_the_limit_by_one_per_round_up_to_the_ceiling() {
    let t0 = Instant::now();
    let mut c = Controller::new(4);
    for _ in 0..3 {
        c.record(Outcome::Answered, t0, t0);
    }
    assert_eq!(c.limit(), 4);
    c.record(Outcome::Answered, t0, t0);
    assert_eq!(
        c.limit(),
        5,
        "a full round (limit answers) without throttling adds one"
    );
    let mut c = Controller::new(CEILING);
    for _ in 0..CEILING * 3 {
        c.record(Outcome::Answered, t0, t0);
    }
    assert_eq!(c.limit(), CEILING);
}

#[test]
fn after_a_recovery_the_backoff_starts_again_from_the_first() {
    let t0 = Instant::now();
    let mut c = Controller::new(8);
    c.record(Outcome::Throttled, t0, t0);
    c.record(Outcome::Throttled, at(t0, 500), at(t0, 500));
    assert_eq!(c.limit(), 2);
    for _ in 0..2 {
        c.record(Outcome::Answered, at(t0, 900), at(t0, 1000));
    }
    assert_eq!(c.limit(), 3);
    c.record(Outcome::Throttled, at(t0, 2000), at(t0, 2000));
    assert_eq!(c.limit(), 1);
    assert_eq!(
        c.admit(0, at(t0, 2001)),
        Err(Some(at(t0, 2000) + FIRST_BACKOFF))
    );
}

#[test]
fn the_service_comes_from_the_sigv4_credential_scope() {
    let auth = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/sqs/aws4_request, \
                SignedHeaders=host;x-amz-date, Signature=abc";
    assert_eq!(service_of(Some(auth)), Some("sqs"));
    assert_eq!(service_of(Some("Bearer x")), None);
    assert_eq!(service_of(None), None);
}

#[test]
fn throttling_codes_are_recognised_in_headers_and_bodies() {
    for code in [
        "Throttling",
        "ThrottlingException",
        "com.amazonaws.dynamodb.v20120810#ThrottlingException",
        "TooManyRequestsException:http://internal.amazon.com/coral/",
        "RequestLimitExceeded",
        "SlowDown",
    ] {
        assert!(is_throttling_code(code), "{code}");
    }
    for code in [
        "ValidationException",
        "AccessDenied",
        "ResourceNotFoundException",
    ] {
        assert!(!is_throttling_code(code), "{code}");
    }
    let xml = b"<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code>\
                <Message>Rate exceeded</Message></Error></ErrorResponse>";
    assert!(body_says_throttled(xml));
    let ec2 =
        b"<Response><Errors><Error><Code>RequestLimitExceeded</Code></Error></Errors></Response>";
    assert!(body_says_throttled(ec2));
    assert!(body_says_throttled(
        br#"{"__type":"ThrottlingException","message":"slow"}"#
    ));
    assert!(!body_says_throttled(br#"{"__type":"ValidationException"}"#));
    assert!(!body_says_throttled(
        b"<Error><Code>NoSuchKey</Code></Error>"
    ));
}

#[tokio::test]
async fn the_gate_lets_at_most_its_limit_through_at_once() {
    let gate = Arc::new(Gate {
        state: Mutex::new((Controller::new(2), 0)),
        changed: Notify::new(),
    });
    let peak = Arc::new(Mutex::new((0usize, 0usize))); // (now, max)
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let (gate, peak) = (gate.clone(), peak.clone());
        tasks.spawn(async move {
            let slot = gate.enter().await;
            {
                let mut p = peak.lock().unwrap();
                p.0 += 1;
                p.1 = p.1.max(p.0);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            peak.lock().unwrap().0 -= 1;
            drop(slot);
        });
    }
    while tasks.join_next().await.is_some() {}
    let max = peak.lock().unwrap().1;
    // Two at first; calm answers may raise the limit by one as the round completes.
    assert!((2..=3).contains(&max), "peak {max}");
    assert_eq!(gate.state.lock().unwrap().1, 0, "every slot was given back");
}
