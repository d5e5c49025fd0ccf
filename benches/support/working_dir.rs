//! The working_dir of issue 20's packaging and submit measurements, shared by the
//! `package` and `ray_peer` benches: per 40 MiB, 20 MiB of random bytes (as weights and
//! archives are) and 21 MiB of source-like text in 40 files.

use std::path::Path;

/// Fills `dir` with `mib` MiB of that mix: random bytes in files of at most 20 MiB
/// (`weights.bin`, `weights_1.bin`, …) and text files of 550,000 bytes per 40 MiB.
pub fn working_dir(dir: &Path, mib: usize) {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut random_left = mib * 1024 * 1024 / 2;
    let mut part = 0;
    while random_left > 0 {
        let n = random_left.min(20 * 1024 * 1024);
        let random: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
        let name = match part {
            0 => "weights.bin".to_string(),
            p => format!("weights_{p}.bin"),
        };
        std::fs::write(dir.join(name), &random).expect("write");
        random_left -= n;
        part += 1;
    }
    let words = [
        "def ",
        "return ",
        "self",
        ".",
        "(",
        ")",
        ":\n",
        "    ",
        "import torch\n",
        "x",
        "y",
        "loss",
        " = ",
        "+",
        "lr",
        "0.001",
        "# comment about the step\n",
        "for i in range(",
    ];
    let files = 40 * (mib / 40).max(1);
    let per_file = 550_000 * mib / 40 * 40 / files;
    for f in 0..files {
        let mut text = String::with_capacity(per_file + 64);
        while text.len() < per_file {
            text.push_str(words[rng.usize(..words.len())]);
        }
        std::fs::write(dir.join(format!("src_{f}.py")), text).expect("write");
    }
}
