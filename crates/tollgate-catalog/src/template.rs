//! Matching a resource URI against an RFC 6570 URI template, so that a
//! `resources/read` of a URI no list names is judged as the template that
//! yields it.
//!
//! The match is structural, without expanding variables: `{var}` stands for
//! one or more characters other than `/ ? #`; `{+var}` and `{#var}` for any
//! characters; `{/var}` for path segments; `{?q}` and `{&q}` for a query
//! part; `{.x}` and `{;x}` for a dotted or `;`-parameter part. Literal text
//! must appear as written.

/// Whether `uri` can be an expansion of `template`.
pub fn matches(template: &str, uri: &str) -> bool {
    match parts(template) {
        Some(parts) => match_parts(&parts, uri),
        None => false,
    }
}

/// A piece of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part<'a> {
    Literal(&'a str),
    /// An expression, by the set of characters its expansion may use.
    Expr(Allowed),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allowed {
    /// One or more characters other than `/ ? #`.
    Segment,
    /// Any characters, possibly none.
    Anything,
    /// Characters other than `?` and `#`, possibly none.
    Path,
    /// Characters other than `#`, possibly none.
    Query,
}

fn parts(template: &str) -> Option<Vec<Part<'_>>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            out.push(Part::Literal(&rest[..open]));
        }
        let close = rest[open..].find('}')? + open;
        let expr = &rest[open + 1..close];
        let allowed = match expr.chars().next()? {
            '+' | '#' => Allowed::Anything,
            '/' | '.' | ';' => Allowed::Path,
            '?' | '&' => Allowed::Query,
            _ => Allowed::Segment,
        };
        out.push(Part::Expr(allowed));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Part::Literal(rest));
    }
    Some(out)
}

fn match_parts(parts: &[Part<'_>], uri: &str) -> bool {
    let Some((first, tail)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Part::Literal(l) => uri.strip_prefix(l).is_some_and(|rest| match_parts(tail, rest)),
        Part::Expr(allowed) => {
            // The expression takes the first `len` bytes, for each length
            // its characters allow.
            let min = usize::from(*allowed == Allowed::Segment);
            let mut ends = vec![0];
            for (i, c) in uri.char_indices() {
                if !fits(*allowed, c) {
                    break;
                }
                ends.push(i + c.len_utf8());
            }
            ends.into_iter()
                .filter(|&len| len >= min)
                .any(|len| match_parts(tail, &uri[len..]))
        }
    }
}

fn fits(allowed: Allowed, c: char) -> bool {
    match allowed {
        Allowed::Segment => !matches!(c, '/' | '?' | '#'),
        Allowed::Anything => true,
        Allowed::Path => !matches!(c, '?' | '#'),
        Allowed::Query => c != '#',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_match_the_templates_that_can_yield_them() {
        for (t, u, ok) in [
            (
                "demo://resource/dynamic/text/{resourceId}",
                "demo://resource/dynamic/text/42",
                true,
            ),
            (
                "demo://resource/dynamic/text/{resourceId}",
                "demo://resource/dynamic/text/",
                false,
            ),
            (
                "demo://resource/dynamic/text/{resourceId}",
                "demo://resource/dynamic/text/4/2",
                false,
            ),
            (
                "demo://resource/dynamic/text/{resourceId}",
                "demo://resource/dynamic/blob/42",
                false,
            ),
            ("file:///{+path}", "file:///etc/hosts", true),
            ("repo://{owner}/{repo}/issues", "repo://acme/app/issues", true),
            ("repo://{owner}/{repo}/issues", "repo://acme/issues", false),
            ("db://users{?id,name}", "db://users?id=1&name=x", true),
            ("db://users{?id,name}", "db://users", true),
            ("docs://{lang}/guide.md", "docs://de/guide.md", true),
            ("docs://{lang}/guide.md", "docs://de/guide.txt", false),
            ("plain://fixed", "plain://fixed", true),
            ("broken://{x", "broken://{x", false),
        ] {
            assert_eq!(matches(t, u), ok, "{t} vs {u}");
        }
    }
}
