//! What the launch checklist looks for in a driver log, found while the log streams past
//! (line by line, across chunk boundaries, without keeping the log in memory).

/// The progress line NeMo-RL's generation prints when a batch of prompts is done.
pub const PROMPTS_DONE: &str = "Processed prompts: 100%";

/// Findings in a driver log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogScan {
    /// Lines containing [`PROMPTS_DONE`].
    pub prompts_done: usize,
    /// The first Weights & Biases run URL (`https://wandb.ai/<entity>/<project>/runs/<id>`).
    pub wandb_url: Option<String>,
    /// Bytes seen.
    pub bytes: u64,
    partial: String,
}

/// Longest partial line kept between chunks; longer lines are scanned in pieces.
const MAX_PARTIAL: usize = 64 * 1024;

impl LogScan {
    pub fn new() -> LogScan {
        LogScan::default()
    }

    /// Scan a whole log.
    pub fn of(text: &str) -> LogScan {
        let mut s = LogScan::new();
        s.feed(text);
        s.finish();
        s
    }

    /// Feed the next chunk of the log.
    pub fn feed(&mut self, chunk: &str) {
        self.bytes += chunk.len() as u64;
        let mut rest = chunk;
        while let Some(pos) = rest.find('\n') {
            let (line, tail) = rest.split_at(pos);
            if self.partial.is_empty() {
                self.line(line);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.push_str(line);
                self.line(&whole);
            }
            rest = &tail[1..];
        }
        self.partial.push_str(rest);
        if self.partial.len() > MAX_PARTIAL {
            let long = std::mem::take(&mut self.partial);
            self.line(&long);
        }
    }

    /// The log ended: scan an unterminated last line.
    pub fn finish(&mut self) {
        if !self.partial.is_empty() {
            let last = std::mem::take(&mut self.partial);
            self.line(&last);
        }
    }

    fn line(&mut self, line: &str) {
        // Progress bars redraw with `\r`; every segment is a line of its own.
        for seg in line.split('\r') {
            if seg.contains(PROMPTS_DONE) {
                self.prompts_done += 1;
            }
            if self.wandb_url.is_none() {
                self.wandb_url = wandb_url(seg);
            }
        }
    }
}

/// A W&B run URL in `line`: `http(s)://<host with "wandb">/<entity>/<project>/runs/<id>`.
pub fn wandb_url(line: &str) -> Option<String> {
    for (start, _) in line.match_indices("http") {
        let candidate: String = line[start..]
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | '<' | '>' | ')'))
            .collect();
        let Some(rest) = candidate
            .strip_prefix("https://")
            .or_else(|| candidate.strip_prefix("http://"))
        else {
            continue;
        };
        let mut parts = rest.split('/');
        let host = parts.next().unwrap_or("");
        let segs: Vec<&str> = parts.collect();
        let runs = segs.iter().position(|s| *s == "runs");
        if host.contains("wandb")
            && let Some(i) = runs
            && i >= 2
            && segs.get(i + 1).is_some_and(|id| !id.is_empty())
        {
            let id = segs[i + 1].split(['?', '#']).next().unwrap_or("");
            let end = format!("{}/runs/{id}", segs[..i].join("/"));
            return Some(format!(
                "{}://{host}/{end}",
                if candidate.starts_with("https") {
                    "https"
                } else {
                    "http"
                }
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_markers_across_chunk_boundaries() {
        let mut s = LogScan::new();
        s.feed("step 1\nProcessed pro");
        s.feed("mpts: 100%| 8/8\nwandb: 🚀 View run at https://wandb.ai/team/proj/runs/ab12cd");
        s.feed("?x=1\nProcessed prompts: 50%|\rProcessed prompts: 100%|\n");
        s.finish();
        assert_eq!(s.prompts_done, 2);
        assert_eq!(
            s.wandb_url.as_deref(),
            Some("https://wandb.ai/team/proj/runs/ab12cd")
        );
        assert_eq!(LogScan::of("no markers").prompts_done, 0);
    }

    #[test]
    fn wandb_urls_need_entity_project_and_run() {
        assert_eq!(wandb_url("see https://wandb.ai/site"), None);
        assert_eq!(wandb_url("https://example.com/a/b/runs/x"), None);
        assert_eq!(
            wandb_url("(https://wandb.example.org/e/p/runs/r1)").as_deref(),
            Some("https://wandb.example.org/e/p/runs/r1")
        );
    }
}
