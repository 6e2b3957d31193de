//! Authentication cost (request path step 5): a verified-token cache hit,
//! and cache misses that verify an RS256 or ES256 JWT (aws-lc-rs) against
//! keys fetched from a real JWKS endpoint. Targets (PERF.md): hit ≤ 1 µs,
//! RS256 miss ≤ 25 µs, ES256 miss ≤ 50 µs.
//!
//! Both paths complete without waiting (keys are loaded, nothing to fetch),
//! so each call is polled once with a no-op waker: no runtime overhead in
//! the numbers.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "benchmark harness")]

#[path = "../tests/common/mod.rs"]
mod common;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use common::{ROUTE, TestIdp, TestKey, authenticator_settings, load};
use criterion::{Criterion, criterion_group, criterion_main};
use tollgate_auth::Authenticator;

fn ready<F: Future>(f: F) -> F::Output {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the benchmarked path must not wait"),
    }
}

fn authenticator(rt: &tokio::runtime::Runtime, idp: &TestIdp, cache_entries: usize) -> Authenticator {
    let loaded = load(&format!(
        "[auth]\ntoken_cache_entries = {cache_entries}\n\n[[auth.issuers]]\nissuer = \"{}\"\nallow_insecure_http = true\n\n\
         [[servers]]\nname = \"github\"\nurl = \"http://127.0.0.1:3001/mcp\"\n",
        idp.issuer
    ));
    let auth = Authenticator::new(&authenticator_settings(&loaded), None).unwrap();
    assert!(rt.block_on(auth.refresh_now()));
    auth
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (rsa, ec) = (TestKey::rsa("rsa-1"), TestKey::ec("ec-1"));
    let idp = rt.block_on(TestIdp::start(&[&rsa, &ec]));

    let cached = authenticator(&rt, &idp, 10_000);
    let token = rsa.sign(&idp.claims("alice", "mcp:tools"));
    ready(cached.authenticate(&token, ROUTE)).unwrap();
    c.bench_function("authenticate/cache_hit", |b| {
        b.iter(|| ready(cached.authenticate(std::hint::black_box(&token), ROUTE)).unwrap())
    });

    // One cache entry and two tokens used in turn: every call is a miss.
    for (name, key) in [("authenticate/miss_rs256", &rsa), ("authenticate/miss_es256", &ec)] {
        let auth = authenticator(&rt, &idp, 1);
        let tokens = [
            key.sign(&idp.claims("alice", "mcp:tools")),
            key.sign(&idp.claims("bob", "mcp:tools")),
        ];
        let mut i = 0;
        c.bench_function(name, |b| {
            b.iter(|| {
                i ^= 1;
                ready(auth.authenticate(&tokens[i], ROUTE)).unwrap()
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
