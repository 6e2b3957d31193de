//! The standard headers (with the `=?base64?…?=` sentinel) and the bounded
//! body scan: the first things the `classify` phase reads of a request.

use http::{HeaderMap, HeaderName, HeaderValue};
use tollgate_mcp::splice;
use tollgate_mcp::{ProtocolVersion, StandardHeaders, Versions, classify_post, decode_header_value, scan};

const HEADERS: [&str; 3] = ["mcp-protocol-version", "mcp-method", "mcp-name"];

/// Header values separated by `\n`, given to `MCP-Protocol-Version`,
/// `Mcp-Method` and `Mcp-Name` in turn (a fourth and later repeat the
/// name). Reading never panics; a decoded name is never longer than the
/// value it came from.
pub(crate) fn headers(data: &[u8]) {
    let mut map = HeaderMap::new();
    for (i, value) in data.split(|b| *b == b'\n').enumerate() {
        let Ok(value) = HeaderValue::from_bytes(value) else {
            continue;
        };
        let name = HeaderName::from_static(HEADERS[i.min(HEADERS.len() - 1)]);
        map.append(name, value);
    }
    let read = StandardHeaders::read(&map);
    if let Some(Ok(name)) = &read.name {
        let raw: usize = map.get_all("mcp-name").iter().map(|v| v.len()).sum();
        assert!(name.len() <= raw, "a decoded name outgrew its header");
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(decoded) = decode_header_value(text)
    {
        assert!(decoded.len() <= text.len(), "decoding grew the value");
    }
}

/// A request body: scanned, classified as a 2026-07-28 and as a legacy
/// call, and its `params.name` located. A located range lies inside the
/// body and holds a JSON string; splicing a new name there keeps the body
/// JSON that scans again to the same number of messages.
pub(crate) fn body_scan(body: &[u8]) {
    let Ok(scanned) = scan(body) else { return };
    let versions = Versions::from_announced(ProtocolVersion::ALL.iter().map(|v| v.as_str()));
    let _ = classify_post(&StandardHeaders::default(), &scanned, versions);
    let _ = scanned.first_id();
    let Ok(Some(at)) = splice::locate(body, &["params", "name"]) else {
        return;
    };
    assert!(at.end <= body.len() && at.start < at.end, "range outside the body");
    assert_eq!(body[at.start], b'"');
    assert_eq!(body[at.end - 1], b'"');
    let Ok(renamed) = splice::replace(body, &["params", "name"], "member_tool") else {
        panic!("a located name could not be replaced");
    };
    let Ok(again) = scan(&renamed) else {
        panic!("a spliced body no longer scans");
    };
    assert_eq!(again.messages().len(), scanned.messages().len());
}
