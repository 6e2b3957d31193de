# Tollgate container image.
#
#   podman build -t tollgate:0.1.0 .        (or docker build)
#
# Two stages: a release build from the lockfile, and a runtime image with
# the binary, the C runtime it links and CA certificates, run as a non-root
# user, without a shell or a package manager. Base images are build
# arguments so a registry mirror (or pinned digests) can be used:
#   --build-arg RUST_IMAGE=mirror.example/rust:1.95-slim-bookworm@sha256:…
#   --build-arg RUNTIME_IMAGE=mirror.example/distroless/cc-debian12:nonroot
# BINARY_STAGE names the stage (or image) that holds /out/tollgate; the
# default builds it here.

ARG RUST_IMAGE=docker.io/library/rust:1.95-slim-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot
ARG BINARY_STAGE=build

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
# --locked: exactly the dependency versions of Cargo.lock, or fail.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p tollgate \
 && install -D -m 0755 target/release/tollgate /out/tollgate

FROM ${BINARY_STAGE} AS binary

FROM ${RUNTIME_IMAGE} AS runtime
COPY --from=binary /out/tollgate /usr/local/bin/tollgate
# The nonroot user of distroless images; the gateway needs no privilege
# (it listens above 1024) and writes only its audit directory.
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/tollgate"]
CMD ["serve", "--config", "/etc/tollgate/tollgate.toml", "--log-format", "json"]
