//! AFL++ entry point for the `jwt_header` target.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Some(target) = tollgate_fuzz::target("jwt_header") {
            target(data);
        }
    });
}
