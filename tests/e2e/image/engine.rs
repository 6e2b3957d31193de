//! A container engine driven from its command line (podman), and the
//! scratch images and containers one test makes, removed on drop.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `podman`, with the flags that let it run where the machine gives no
/// cgroup delegation and a low open-files limit (a CI sandbox): `runc`
/// with cgroupfs, and container limits below the caller's own.
pub(crate) struct Engine {
    global: Vec<&'static str>,
}

impl Engine {
    /// The engine, when `podman` is installed and answers.
    pub(crate) fn find() -> Option<Engine> {
        let mut global = Vec::new();
        if Command::new("runc")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            global.extend(["--runtime", "runc", "--cgroup-manager", "cgroupfs"]);
        }
        let engine = Engine { global };
        engine.output(&["info", "--format", "{{.Host.OCIRuntime.Name}}"]).ok()?;
        Some(engine)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("podman");
        c.args(&self.global).args(args);
        c
    }

    fn output(&self, args: &[&str]) -> Result<Output, Output> {
        let out = self.command(args).output().expect("podman runs");
        if out.status.success() { Ok(out) } else { Err(out) }
    }

    fn must(&self, args: &[&str]) -> String {
        match self.output(args) {
            Ok(out) => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            Err(out) => panic!(
                "podman {}: {}\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    /// An image's field through a Go template.
    pub(crate) fn inspect(&self, image: &str, format: &str) -> String {
        self.must(&["image", "inspect", "--format", format, image])
    }

    /// Whether `image` runs `args` to success with `options` before it.
    pub(crate) fn runs(&self, image: &str, options: &[&str], args: &[&str]) -> bool {
        let mut all = vec!["run", "--rm"];
        all.extend(LIMITS);
        all.extend(options);
        all.push(image);
        all.extend(args);
        self.output(&all).is_ok()
    }
}

/// Container limits at or below any caller's, so the runtime may set them.
const LIMITS: [&str; 4] = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=1024:1024"];

/// One test's images and container: names unique to this process, all
/// removed when dropped.
pub(crate) struct Scratch<'e> {
    engine: &'e Engine,
    dir: tempfile::TempDir,
    tag: String,
    images: Vec<String>,
}

impl<'e> Scratch<'e> {
    pub(crate) fn new(engine: &'e Engine) -> Scratch<'e> {
        Scratch {
            engine,
            dir: tempfile::tempdir().unwrap(),
            tag: format!("e2e-{}", std::process::id()),
            images: Vec::new(),
        }
    }

    /// The scratch directory (mounted as the container's /etc/tollgate).
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn build(&mut self, name: &str, context: &Path, file: &Path, args: &[String]) -> String {
        let image = format!("localhost/tollgate-{name}:{}", self.tag);
        let mut all = vec!["build", "--quiet", "--network", "none", "-t", &image, "-f"];
        let file = file.to_string_lossy();
        all.push(&file);
        all.extend(args.iter().map(String::as_str));
        let context = context.to_string_lossy();
        all.push(&context);
        self.engine.must(&all);
        self.images.push(image.clone());
        image
    }

    /// The repository's Dockerfile built to its runtime stage, with this
    /// gateway binary and a distroless-like base made from this machine.
    pub(crate) fn build_runtime(&mut self, binary: &Path) -> String {
        let ctx = self.dir.path().join("binary");
        std::fs::create_dir_all(&ctx).unwrap();
        std::fs::copy(binary, ctx.join("tollgate")).unwrap();
        std::fs::write(ctx.join("Containerfile"), "FROM scratch\nCOPY tollgate /out/tollgate\n").unwrap();
        let binary_image = self.build("binary", &ctx, &ctx.join("Containerfile"), &[]);
        let base = self.runtime_base(binary);
        let args = [
            format!("--build-arg=BINARY_STAGE={binary_image}"),
            format!("--build-arg=RUNTIME_IMAGE={base}"),
            "--target=runtime".to_owned(),
        ];
        let root = tollgate_e2e::repo_root();
        self.build("image", &root, &super::dockerfile(), &args)
    }

    /// What a distroless `cc` image holds: the C runtime the binary links,
    /// CA certificates, and the `nonroot` user (65532).
    fn runtime_base(&mut self, binary: &Path) -> String {
        let root = self.dir.path().join("base/rootfs");
        for lib in linked_libraries(binary) {
            let to = root.join(lib.strip_prefix("/").unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&lib, &to).unwrap();
        }
        let etc = root.join("etc");
        std::fs::create_dir_all(etc.join("ssl/certs")).unwrap();
        std::fs::create_dir_all(root.join("tmp")).unwrap();
        std::fs::write(
            etc.join("passwd"),
            "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
        )
        .unwrap();
        std::fs::write(etc.join("group"), "root:x:0:\nnonroot:x:65532:\n").unwrap();
        let certs = Path::new("/etc/ssl/certs/ca-certificates.crt");
        if certs.is_file() {
            std::fs::copy(certs, etc.join("ssl/certs/ca-certificates.crt")).unwrap();
        }
        let ctx = self.dir.path().join("base");
        std::fs::write(ctx.join("Containerfile"), "FROM scratch\nCOPY rootfs/ /\n").unwrap();
        self.build("base", &ctx, &ctx.join("Containerfile"), &[])
    }

    /// Run `image` with its default command, host networking, the scratch
    /// directory as /etc/tollgate and a tmpfs for the audit trail.
    pub(crate) fn serve(&self, image: &str, config: &Path) -> Container<'e> {
        let name = format!("tollgate-{}", self.tag);
        let volume = format!("{}:/etc/tollgate:ro", config.display());
        let mut all = vec!["run", "-d", "--name", &name, "--network", "host"];
        all.extend(LIMITS);
        all.extend(["-v", &volume, "--tmpfs", "/var/lib/tollgate:rw,mode=1777", image]);
        self.engine.must(&all);
        Container {
            engine: self.engine,
            name,
        }
    }

    /// The container's output so far.
    pub(crate) fn logs(&self) -> String {
        let name = format!("tollgate-{}", self.tag);
        match self.engine.output(&["logs", &name]) {
            Ok(out) | Err(out) => {
                String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
            }
        }
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        for image in self.images.iter().rev() {
            let _ = self.engine.output(&["rmi", "--force", image]);
        }
    }
}

/// A running container, removed on drop.
pub(crate) struct Container<'e> {
    engine: &'e Engine,
    name: String,
}

impl Drop for Container<'_> {
    fn drop(&mut self) {
        let _ = self.engine.output(&["rm", "--force", "--time", "2", &self.name]);
    }
}

/// The shared libraries `binary` loads, from `ldd`, symlinks resolved to
/// the file under the path the loader asks for.
fn linked_libraries(binary: &Path) -> Vec<PathBuf> {
    let out = Command::new("ldd").arg(binary).output().expect("ldd runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let path = line.split_whitespace().find(|w| w.starts_with('/'))?;
            Some(PathBuf::from(path))
        })
        .collect()
}
