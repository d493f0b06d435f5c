//! Stamps the engine version with a hash of the engine's source, so that results stored by one
//! build are never served as results of another: any change under `src/` changes the run ids.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable source directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    // FNV-1a, 64 bit, over each file's path (relative, '/'-separated) and contents.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= b as u64;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for file in &files {
        let relative = file.strip_prefix(&root).expect("under the crate").to_string_lossy().replace('\\', "/");
        feed(relative.as_bytes());
        feed(&[0]);
        feed(&fs::read(file).expect("readable source file"));
        feed(&[0]);
    }
    println!("cargo:rustc-env=BUFFERLAB_SOURCE_HASH={hash:016x}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=build.rs");
}
