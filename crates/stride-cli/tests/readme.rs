//! The README's commands exist: every `stride ...` line of its code blocks names a subcommand
//! whose `--help` succeeds and lists each `--flag` the line uses, every script or scenario it
//! names is in the tree, and every `make -C hw TARGET` is a target of hw/Makefile.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_stride");

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The command lines of the README's code blocks (comments cut, `;` and ` / ` split).
fn commands(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if !inside {
            continue;
        }
        let code = line.split(" #").next().unwrap_or("").trim();
        for part in code.split(" ; ").flat_map(|p| p.split(" / ")) {
            let part = part.trim();
            if part.starts_with("perf ") {
                out.push(format!("stride {part}"));
            } else if !part.is_empty() {
                out.push(part.to_string());
            }
        }
    }
    out
}

/// `stride SUB [SUB2] ...`: the subcommand path (words before the first argument).
fn subcommand(words: &[&str]) -> Vec<String> {
    words
        .iter()
        .skip(1)
        .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase()))
        .map(|w| w.to_string())
        .collect()
}

#[test]
fn every_command_the_readme_shows_exists() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let cmds = commands(&readme);
    let mut checked = 0;
    for cmd in &cmds {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        match words.first().copied() {
            Some("stride") => {
                let sub = subcommand(&words);
                assert!(!sub.is_empty(), "{cmd}: no subcommand");
                let help = Command::new(BIN)
                    .args(&sub)
                    .arg("--help")
                    .output()
                    .expect("run stride");
                assert!(
                    help.status.success(),
                    "{cmd}: `stride {} --help` failed",
                    sub.join(" ")
                );
                let text = String::from_utf8_lossy(&help.stdout);
                for flag in words.iter().filter(|w| w.starts_with("--")) {
                    let flag = flag.split('=').next().unwrap();
                    assert!(
                        text.contains(flag),
                        "{cmd}: `stride {}` has no {flag}",
                        sub.join(" ")
                    );
                }
                checked += 1;
            }
            Some("python3") | Some("bash") => {
                let script = words[1];
                assert!(
                    root().join(script).exists(),
                    "{cmd}: {script} is not in the tree"
                );
                checked += 1;
            }
            Some("make") => {
                let mk = std::fs::read_to_string(root().join(words[2]).join("Makefile"))
                    .expect("Makefile");
                let target = words[3];
                assert!(
                    mk.lines().any(|l| l.starts_with(&format!("{target}:"))),
                    "{cmd}: no target {target}"
                );
                checked += 1;
            }
            _ => {}
        }
        for w in words.iter().filter(|w| w.starts_with("scenarios/")) {
            assert!(root().join(w).exists(), "{cmd}: {w} is not in the tree");
        }
    }
    assert!(
        checked >= 20,
        "only {checked} commands found in README.md: {cmds:?}"
    );
}
