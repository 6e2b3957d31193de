use proptest::prelude::*;

use super::*;

fn all(body: &[u8]) -> Vec<Event> {
    events(body).collect()
}

fn data(d: &str) -> Event {
    Event::message(d)
}

/// Everything a decoder yields for `chunks`: the events, the error if any,
/// and whether the input ended mid-event.
fn decode(chunks: &[&[u8]], d: Decoder) -> (Vec<Event>, Option<SseError>, bool) {
    let mut d = d;
    let mut out = Vec::new();
    for chunk in chunks {
        d.feed(chunk);
        loop {
            match d.next_event() {
                Ok(Some(e)) => out.push(e),
                Ok(None) => break,
                Err(e) => return (out, Some(e), d.is_mid_event()),
            }
        }
    }
    (out, None, d.is_mid_event())
}

#[test]
fn spec_examples() {
    // WHATWG "stock ticker": data lines joined with LF.
    assert_eq!(all(b"data: YHOO\ndata: +2\ndata: 10\n\n"), [data("YHOO\n+2\n10")]);
    // Comment block, ids (an `id` without colon is an empty id), one
    // leading space stripped, and a trailing event never dispatched.
    let mut it = events(b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n");
    let got: Vec<_> = it.by_ref().collect();
    assert_eq!(
        got,
        [
            Event {
                comments: vec![" test stream".into()],
                ..Event::default()
            },
            Event {
                id: Some("1".into()),
                ..data("first event")
            },
            Event {
                id: Some(String::new()),
                ..data("second event")
            },
        ]
    );
    assert!(it.is_mid_event());
    // `data` without colon is an empty data line.
    let mut it = events(b"data\n\ndata\ndata\n\ndata:");
    assert_eq!(it.by_ref().collect::<Vec<_>>(), [data(""), data("\n")]);
    assert!(it.is_mid_event());
    assert_eq!(all(b"data:test\n\ndata: test\n\n"), [data("test"), data("test")]);
}

#[test]
fn fields_and_comments() {
    let e = &all(b"event: add\nevent:\nid: a\0b\nid: 7\nretry: 1500\nfoo: bar\ndata: x\n:one\n:\n\n")[0];
    assert_eq!(e.event.as_deref(), Some(""));
    assert_eq!(e.id.as_deref(), Some("7"));
    assert_eq!(e.retry, Some(1500));
    assert_eq!(e.comments, ["one", ""]);
    assert_eq!((e.data.as_str(), e.has_data), ("x", true));
    // Retry only from ASCII digits that fit.
    for bad in [
        "retry: 1e3",
        "retry: -1",
        "retry:  5",
        "retry: +5",
        "retry:",
        "retry: 99999999999999999999",
    ] {
        let got = all(format!("retry: 9\n{bad}\ndata\n\n").as_bytes());
        assert_eq!(got[0].retry, Some(9), "{bad}");
    }
    // A block of ignored lines yields nothing; a retry-only block is kept.
    assert_eq!(all(b"foo: 1\nid: \0\nretry: x\n\n"), []);
    let retry = Event {
        retry: Some(10),
        ..Event::default()
    };
    assert_eq!(all(b"retry: 10\n\n\n\n"), [retry]);
    // The MCP priming event: an id and empty data.
    let priming = &all(b"id: s1-0\ndata:\n\n")[0];
    assert!(priming.has_data && priming.data.is_empty());
}

#[test]
fn byte_order_mark_and_line_ends() {
    assert_eq!(all(b"\xEF\xBB\xBFdata: x\n\n"), [data("x")]);
    // Only at the very start: a second BOM makes the field name unknown.
    assert_eq!(all(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"), []);
    assert_eq!(all(b"data: a\rdata: b\r\rdata: c\r\n\r\n"), [data("a\nb"), data("c")]);
    // A BOM split across chunks is still skipped.
    let (got, ..) = decode(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"], Decoder::default());
    assert_eq!(got, [data("x")]);
}

#[test]
fn invalid_utf8_is_replaced_or_refused() {
    let body = b"data: ok\n\ndata: a\xFFb\n\n";
    let mut it = events(body);
    assert_eq!(it.next(), Some(data("ok")));
    assert!(!it.saw_invalid_utf8());
    assert_eq!(it.next(), Some(data("a\u{FFFD}b")));
    assert!(it.saw_invalid_utf8());
    let (got, err, _) = decode(&[body], Decoder::default().reject_invalid_utf8());
    assert_eq!((got, err), (vec![data("ok")], Some(SseError::InvalidUtf8)));
}

#[test]
fn the_decoder_is_bounded() {
    let (got, err, _) = decode(&[b"data: 12345\n\ndata: 123456\n\n"], Decoder::new(11));
    assert_eq!(
        (got, err),
        (vec![data("12345")], Some(SseError::TooLarge { limit: 11 }))
    );
    // An endless line fails before its end arrives, and stays failed.
    let mut d = Decoder::new(1000);
    d.feed(b"data: ");
    assert_eq!(d.next_event(), Ok(None));
    for _ in 0..10 {
        d.feed(&[b'x'; 100]);
        let _ = d.next_event();
    }
    assert_eq!(d.next_event(), Err(SseError::TooLarge { limit: 1000 }));
    d.feed(b"\n\n");
    assert_eq!(d.next_event(), Err(SseError::TooLarge { limit: 1000 }));
    // Many small lines of one event count together.
    let many = "data: x\n".repeat(200);
    assert!(decode(&[many.as_bytes()], Decoder::new(1000)).1.is_some());
}

#[test]
fn write_to_keeps_values_on_their_lines() {
    let e = Event {
        event: Some("a\r\nb".into()),
        id: Some("1\n".into()),
        retry: Some(5),
        comments: vec!["x\ry".into()],
        data: "p\r\nq\rr\ns".into(),
        has_data: true,
    };
    let mut out = Vec::new();
    e.write_to(&mut out);
    assert_eq!(
        out,
        b":x\n:y\nevent: ab\nid: 1\nretry: 5\ndata: p\ndata: q\ndata: r\ndata: s\n\n"
    );
    let mut out = Vec::new();
    data("").write_to(&mut out);
    assert_eq!(out, b"data:\n\n", "every field line has its colon");
}

fn event() -> impl Strategy<Value = Event> {
    let line = "\\PC{0,12}";
    (
        proptest::option::of(line),
        proptest::option::of(line),
        proptest::option::of(any::<u64>()),
        proptest::collection::vec(line, 0..3),
        proptest::option::of(proptest::collection::vec(line, 1..4)),
    )
        .prop_map(|(event, id, retry, comments, data)| Event {
            event,
            id,
            retry,
            comments,
            has_data: data.is_some(),
            data: data.map(|d| d.join("\n")).unwrap_or_default(),
        })
        .prop_filter("an empty block is not an event", |e| *e != Event::default())
}

/// SSE-like bytes: field names, separators, every line end, a BOM and
/// bytes that are not UTF-8.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(&b"data"[..]),
        Just(&b"event"[..]),
        Just(&b"id"[..]),
        Just(&b"retry"[..]),
        Just(&b":"[..]),
        Just(&b" "[..]),
        Just(&b"\n"[..]),
        Just(&b"\r"[..]),
        Just(&b"\r\n"[..]),
        Just(&b"x7"[..]),
        Just(&b"\xEF\xBB\xBF"[..]),
        Just(&b"\xFF"[..]),
        Just(&b"\0"[..]),
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|p| p.concat())
}

/// `body` cut at the given points (taken modulo its length).
fn split(body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut at = 0;
    let mut out = Vec::new();
    for c in cuts.into_iter().chain([body.len()]) {
        out.push(body[at..c].to_vec());
        at = c;
    }
    out
}

proptest! {
    #[test]
    fn written_events_read_back(evs in proptest::collection::vec(event(), 0..6)) {
        let mut out = Vec::new();
        evs.iter().for_each(|e| e.write_to(&mut out));
        let mut it = events(&out);
        prop_assert_eq!(it.by_ref().collect::<Vec<_>>(), evs);
        prop_assert!(!it.is_mid_event());
    }

    #[test]
    fn chunking_never_changes_the_events(
        body in sse_bytes(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        limit in prop_oneof![Just(usize::MAX), 0usize..40],
        strict in any::<bool>(),
    ) {
        let new = || if strict { Decoder::new(limit).reject_invalid_utf8() } else { Decoder::new(limit) };
        let whole = decode(&[&body], new());
        let parts = split(&body, &cuts);
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        prop_assert_eq!(&decode(&parts, new()), &whole);
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        prop_assert_eq!(&decode(&bytes, new()), &whole);
        if limit == usize::MAX && !strict {
            let mut it = events(&body);
            prop_assert_eq!(&it.by_ref().collect::<Vec<_>>(), &whole.0);
            prop_assert_eq!(it.is_mid_event(), whole.2);
        }
    }

    #[test]
    fn crlf_cr_and_lf_are_the_same(
        lines in proptest::collection::vec("(data|event|id|retry|:)?:? ?[a-z0-9]{0,4}", 0..12),
        ends in proptest::collection::vec(0usize..3, 12),
    ) {
        let lf: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut mixed = String::new();
        for (l, e) in lines.iter().zip(&ends) {
            // After a lone CR, an empty line's LF would join it as one CRLF.
            let e = if l.is_empty() && mixed.ends_with('\r') { 1 } else { *e };
            mixed.push_str(l);
            mixed.push_str(["\n", "\r", "\r\n"][e]);
        }
        prop_assert_eq!(all(mixed.as_bytes()), all(lf.as_bytes()));
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..200),
        cuts in proptest::collection::vec(any::<usize>(), 0..4),
    ) {
        let _ = all(&body);
        let parts = split(&body, &cuts);
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let _ = decode(&parts, Decoder::new(64));
    }
}
