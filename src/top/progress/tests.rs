use super::*;

fn parse(text: &str) -> ProgressParser {
    let mut parser = ProgressParser::default();
    for line in text.lines() {
        parser.feed(line);
    }
    parser
}

fn steps(p: &Progress) -> Vec<u64> {
    p.history.iter().map(|h| h.step).collect()
}

/// Two sync GRPO steps (v0.5+ strings) with worker lines between driver lines.
const GRPO: &str = "
========================= Epoch 1/2 =========================

========================= Step 1/2 =========================
▶ Preparing batch...
▶ Generating responses for batch of size 64...
(VllmGenerationWorker pid=2816431) Processed prompts:   0%|          | 0/64 [00:00<?, ?it/s, est. speed input: 0.00 toks/s, output: 0.00 toks/s]
(VllmGenerationWorker pid=2816431) Processed prompts: 100%|██████████| 64/64 [00:38<00:00,  1.68it/s, est. speed input: 182.41 toks/s, output: 1702.55 toks/s]
▶ Processing rewards...,
▶ Computing advantages...
▶ Training policy...
Logged data to /results/logs/train_data_step1.jsonl

📊 Training Results:
  • Loss: -0.0132
  • Generation KL Error: 0.0009
  • Avg Reward: 0.4785
  • Mean Generation Length: 812.3418

⏱️  Timing:
  • Total step time: 95.31s
  • generation: 41.27s (43.3%)
  • policy_training: 30.85s (32.4%)

🔍 Performance Metrics:
  • Mean Total Tokens per Sample: 1043.77
  • Throughputs (per GPU):
    - E2E (Samples/sec/gpu): 0.67
    - E2E (Tokens/sec/gpu): 700.95
    - Policy Training (Tokens/sec/gpu): 2165.62
  • Throughputs (per Group):
    - E2E (Samples/sec): 5.37
    - E2E (Tokens/sec): 5607.60

========================= Step 2/2 =========================
▶ Preparing batch...
(VllmGenerationWorker pid=2816431) Processed prompts:  45%|████▌     | 29/64 [00:12<00:14,  2.40it/s, est. speed input: 180.00 toks/s, output: 1600.00 toks/s]
▶ Starting validation at step 2...

📊 Validation Results:
    • Accuracy: 0.5312
    • Average response length: 745.2 tokens
    • Samples processed: 256

  ⏱️  Validation Timing:
    • Total validation time: 38.71s
Saving checkpoint for step 2...

📊 Training Results:
  • Loss: 0.0047
  • Generation KL Error: 0.0011
  • Avg Reward: 0.6133

⏱️  Timing:
  • Total step time: 90.02s
  • generation: 40.00s (44.4%)

🔍 Performance Metrics:
  • Throughputs (per GPU):
    - E2E (Tokens/sec/gpu): 720.50
Max number of steps has been reached, stopping training early
";

#[test]
fn grpo_steps_fill_progress_and_history() {
    let parser = parse(GRPO);
    let p = parser.progress();
    assert_eq!((p.step, p.max_steps), (Some(2), Some(2)));
    assert_eq!((p.epoch, p.max_epochs), (Some(1), Some(2)));
    assert_eq!(p.loss, Some(0.0047));
    assert_eq!(p.reward, Some(0.6133));
    assert_eq!(p.step_time, Some(90.02));
    assert_eq!(p.throughput, Some(720.50));
    assert_eq!(p.throughput_unit.as_deref(), Some("tokens/s/gpu"));
    assert_eq!(p.validation_accuracy, Some(0.5312));
    // The step-2 bar reset step 1's 64/64.
    assert_eq!((p.prompts_done, p.prompts_total), (Some(29), Some(64)));
    assert_eq!(
        p.history,
        vec![
            StepPoint {
                step: 1,
                loss: Some(-0.0132),
                reward: Some(0.4785),
                throughput: Some(700.95),
                step_time: Some(95.31),
            },
            // Finished by the driver line after its performance block.
            StepPoint {
                step: 2,
                loss: Some(0.0047),
                reward: Some(0.6133),
                throughput: Some(720.50),
                step_time: Some(90.02),
            },
        ]
    );
}

#[test]
fn a_step_is_pushed_when_its_block_ends_not_a_step_later() {
    let mut parser = ProgressParser::default();
    for line in GRPO.lines().take_while(|l| !l.contains("Step 2/2")) {
        parser.feed(line);
    }
    // Performance rows alone do not finish it: more rows may follow.
    assert!(parser.progress().history.is_empty());
    parser.feed("");
    parser.feed("▶ Preparing batch...");
    assert_eq!(steps(parser.progress()), vec![1]);
    // The banner does not push it twice.
    parser.feed("========================= Step 2/2 =========================");
    assert_eq!(steps(parser.progress()), vec![1]);
}

#[test]
fn dapo_uses_the_total_reward() {
    let parser = parse(
        "========================= Step 1/5 =========================
📊 Training Results:
  • Loss: 0.0100
  • Avg Filtered Reward: 0.9000
  • Avg Total Reward: 0.4500
",
    );
    assert_eq!(parser.progress().reward, Some(0.45));
}

#[test]
fn async_grpo_step_numbers_are_global() {
    let parser = parse(
        "✅ Buffer ready for step 0! Starting training loop...

========================= Step 7/100 =========================
📦 Sampling from replay buffer...
📊 Step coordination: training_step=6, max_age=1, buffer_size=1024
▶ Processing rewards...
  📊 Rewards stats: min=0.0000, max=1.0000, mean=0.6133, std=0.4870
▶ Training policy...

📊 Training Results:
  • Loss: 0.0047
  • Generation KL Error: 0.0011
  • Avg Reward: 0.6133
  • Buffer Size: 1024
  • Avg Trajectory Age: 0.50 steps

⏱️  Timing:
  • Total step time: 50.00s
  • exposed_generation: 10.00s (20.0%)

🔍 Performance Metrics:
  • Training Worker Idle Time Ratio: 12.00%
  • Throughputs (per GPU):
    - E2E (Tokens/sec/gpu): 900.00

📊 Efficiency Summary (Step 6):
  init/total                               1.00      2.00%
  Efficiency                                         80.00%

========================= Step 8/100 =========================
",
    );
    let p = parser.progress();
    assert_eq!((p.step, p.max_steps), (Some(8), Some(100)));
    assert_eq!(steps(p), vec![7]);
    assert_eq!(p.history[0].throughput, Some(900.0));
    assert_eq!(p.reward, Some(0.6133));
}

#[test]
fn sft_has_loss_and_step_time_and_no_throughput() {
    let parser = parse(
        "========================= Epoch 1/1 =========================
========================= Step 12/250 =========================
▶ Preparing batch...
▶ Taking a training step...

📊 Training Results:
  • Loss: 1.2874
  • Training FLOPS: 312.40 TFLOPS (39.05 TFLOPS per rank)
  • Training Model Floating Point Utilization: 31.57%

⏱️  Timing:
  • Total step time: 6.42s
  • policy_training: 5.97s (93.0%)
  • data_processing: 0.31s (4.8%)

📊 Validation Results:
    • Validation loss: 1.3012

  ⏱️  Validation Timing:
    • Total validation time: 12.00s

========================= Step 13/250 =========================
",
    );
    let p = parser.progress();
    assert_eq!(p.step, Some(13));
    assert_eq!(p.throughput, None);
    assert_eq!(p.validation_accuracy, None);
    assert_eq!(
        p.history,
        vec![StepPoint {
            step: 12,
            loss: Some(1.2874),
            step_time: Some(6.42),
            ..StepPoint::default()
        }]
    );
}

#[test]
fn dpo_reads_lower_case_loss_and_only_validation_accuracy() {
    let parser = parse(
        "========================= Step 3/40 =========================
▶ Taking a training step...

📊 Training Results:
  • loss: 0.6412
  • sft_loss: 0.0000
  • preference_loss: 0.6412
  • accuracy: 0.6875
  • rewards_chosen_mean: 0.0421
  • num_valid_samples: 128.0000

⏱️  Timing:
  • Total step time: 3.10s
",
    );
    let p = parser.progress();
    assert_eq!(p.loss, Some(0.6412));
    // The training batch's preference accuracy is not a validation accuracy.
    assert_eq!(p.validation_accuracy, None);

    let mut parser = parser;
    for line in "▶ Starting validation at step 3 for `validation` set..

📊 Validation Results for `validation` set:
    • Validation loss: 0.6500
    • Validation accuracy: 0.6641

  ⏱️  Validation Timing for `validation` set:
    • Total validation time: 4.00s
"
    .lines()
    {
        parser.feed(line);
    }
    assert_eq!(parser.progress().validation_accuracy, Some(0.6641));
    assert_eq!(parser.progress().loss, Some(0.6412));
    assert_eq!(steps(parser.progress()), vec![3]);
}

#[test]
fn old_dpo_strings_are_read_too() {
    let parser = parse(
        "========================= Step 1/10 =========================
📊 Training Results:
  • Loss: 0.6900
📊 Validation Results:
    • Validation loss: 0.6800
    • Validation accuracy: 0.5100
",
    );
    assert_eq!(parser.progress().loss, Some(0.69));
    assert_eq!(parser.progress().validation_accuracy, Some(0.51));
}

#[test]
fn distillation_has_no_reward() {
    let parser = parse(
        "========================= Epoch 1/3 =========================
========================= Step 5/50 =========================
▶ Preparing for teacher logprob inference...
▶ Computing teacher logprobs...
▶ Training policy...

📊 Training Results:
  • Loss: 0.2231
  • Mean Generation Length: 512.0000

⏱️  Timing:
  • Total step time: 20.50s
",
    );
    let p = parser.progress();
    assert_eq!(p.loss, Some(0.2231));
    assert_eq!(p.reward, None);
    assert_eq!(p.step_time, Some(20.5));
}

#[test]
fn ppo_inner_steps_and_sub_timers_do_not_count() {
    let parser = parse(
        "▶ Step 1/4...
  • generation: 41.27s (43.3%)
  • Total step time: 9.00s
  • 3/5 masked sequences were correct (reward=1) → 60.00%
",
    );
    let p = parser.progress();
    assert_eq!(p.step, None);
    // Outside a timing block the bullet is not the step time.
    assert_eq!(p.step_time, None);
    assert_eq!(p.reward, None);
}

#[test]
fn vllm_bar_with_carriage_returns_ray_prefix_and_colours() {
    let mut parser = ProgressParser::default();
    parser.feed(
        "\x1b[36m(VllmGenerationWorker pid=39112, ip=127.0.0.1)\x1b[0m Processed prompts:   0%|          | 0/64 [00:00<?, ?it/s, est. speed input: 0.00 toks/s, output: 0.00 toks/s]\rProcessed prompts:  45%|████▌     | 29/64 [00:30<00:33,  1.05it/s, est. speed input: 97.30 toks/s, output: 905.12 toks/s]\r",
    );
    let p = parser.progress();
    assert_eq!((p.prompts_done, p.prompts_total), (Some(29), Some(64)));

    // Colours inside the line and a dedup suffix.
    parser.feed(
        "\x1b[36m(VllmGenerationWorker pid=39112, ip=127.0.0.1)\x1b[0m \x1b[1mProcessed prompts\x1b[0m: 100%|██████████| 64/64 [01:12<00:00,  1.13s/it, est. speed input: 97.30 toks/s, output: 905.12 toks/s] [repeated 3x across cluster]",
    );
    let p = parser.progress();
    assert_eq!((p.prompts_done, p.prompts_total), (Some(64), Some(64)));
}

#[test]
fn worker_lines_do_not_end_a_block() {
    let mut parser = ProgressParser::default();
    for line in [
        "========================= Step 1/3 =========================",
        "⏱️  Timing:",
        "  • Total step time: 10.00s",
        "(MegatronPolicyWorker[rank=3] pid=77) some worker chatter",
        "🔍 Performance Metrics:",
        "(MegatronPolicyWorker[rank=3] pid=77) more chatter",
        "    - E2E (Tokens/sec/gpu): 123.40",
    ] {
        parser.feed(line);
    }
    assert_eq!(parser.progress().throughput, Some(123.4));
    parser.feed("Max number of steps has been reached, stopping training early");
    assert_eq!(parser.progress().history[0].throughput, Some(123.4));
}

#[test]
fn global_step_counts_across_epoch_resets() {
    fn feed_step(parser: &mut ProgressParser, n: u64, m: u64) {
        parser.feed(&format!("{0} Step {n}/{m} {0}", "=".repeat(25)));
        parser.feed("📊 Training Results:");
        parser.feed(&format!("  • Loss: 0.{n}"));
    }
    let mut parser = ProgressParser::default();
    parser.feed("========================= Epoch 1/2 =========================");
    feed_step(&mut parser, 1, 2);
    feed_step(&mut parser, 2, 2);
    parser.feed("========================= Epoch 2/2 =========================");
    feed_step(&mut parser, 1, 2);
    feed_step(&mut parser, 2, 2);
    parser.feed("========================= Step 3/2 =========================");
    assert_eq!(steps(parser.progress()), vec![1, 2, 3, 4]);
    assert_eq!(parser.progress().step, Some(3));
}

#[test]
fn joining_mid_run_assumes_full_epochs_and_checkpoints_correct_it() {
    let mut parser = ProgressParser::default();
    parser.feed("========================= Epoch 3/5 =========================");
    parser.feed("========================= Step 2/10 =========================");
    parser.feed("📊 Training Results:");
    parser.feed("  • Loss: 0.5000");
    parser.feed("========================= Step 3/10 =========================");
    parser.feed("Saving checkpoint for step 27...");
    parser.feed("📊 Training Results:");
    parser.feed("  • Loss: 0.4000");
    parser.feed("========================= Step 4/10 =========================");
    assert_eq!(steps(parser.progress()), vec![22, 27]);
}

#[test]
fn history_keeps_the_last_120_steps() {
    let mut parser = ProgressParser::default();
    for n in 1..=130 {
        parser.feed(&format!("===== Step {n}/130 ====="));
        parser.feed("⏱️  Timing:");
        parser.feed("  • Total step time: 1.00s");
    }
    parser.feed("===== Step 131/130 =====");
    let history = &parser.progress().history;
    assert_eq!(history.len(), HISTORY_LEN);
    assert_eq!(history.first().map(|p| p.step), Some(11));
    assert_eq!(history.last().map(|p| p.step), Some(130));
}

#[test]
fn nan_and_exponents_parse() {
    let parser = parse(
        "===== Step 1/2 =====
📊 Training Results:
  • Loss: nan
  • Avg Reward: 1e-05
",
    );
    assert!(parser.progress().loss.is_some_and(f64::is_nan));
    assert_eq!(parser.progress().reward, Some(1e-5));
}

#[test]
fn wandb_url_in_both_forms() {
    let parser = parse(
        "wandb: Tracking run with wandb version 0.19.1
wandb: ⭐️ View project at https://wandb.ai/team/nemo-rl
wandb: 🚀 View run at \x1b[34m\x1b[4mhttps://wandb.ai/team/nemo-rl/runs/abc123\x1b[0m
",
    );
    assert_eq!(
        parser.wandb_url(),
        Some("https://wandb.ai/team/nemo-rl/runs/abc123")
    );

    let parser =
        parse("wandb: 🚀 View run grpo-llama-8b at: https://wandb.ai/team/nemo-rl/runs/xyz789");
    assert_eq!(
        parser.wandb_url(),
        Some("https://wandb.ai/team/nemo-rl/runs/xyz789")
    );

    // A project link is not a run link.
    let parser = parse("wandb: ⭐️ View project at https://wandb.ai/team/nemo-rl");
    assert_eq!(parser.wandb_url(), None);
}

#[test]
fn user_overrides_read_their_own_format_on_any_line() {
    let patterns = ProgressPatterns::with_overrides(&[
        r"step=iter (\d+) of (\d+)".to_string(),
        r"loss=loss=([-\d.]+)".to_string(),
        r"reward=reward=([-\d.]+)".to_string(),
        r"throughput=tok/s=([\d.]+)".to_string(),
    ])
    .expect("valid overrides");
    assert!(!patterns.is_default(ProgressField::Step));
    assert!(patterns.is_default(ProgressField::Epoch));
    let mut parser = ProgressParser::new(patterns);
    parser.feed("iter 4 of 9: loss=0.25 reward=0.75 tok/s=1000.5");
    let p = parser.progress();
    assert_eq!((p.step, p.max_steps), (Some(4), Some(9)));
    assert_eq!(p.loss, Some(0.25));
    assert_eq!(p.reward, Some(0.75));
    assert_eq!(p.throughput, Some(1000.5));
    // A user's throughput has no known unit.
    assert_eq!(p.throughput_unit, None);
    parser.feed("iter 5 of 9: loss=0.2 reward=0.8 tok/s=1001");
    assert_eq!(steps(parser.progress()), vec![4]);
}

#[test]
fn override_errors_name_the_problem() {
    let err = |spec: &str| {
        ProgressPatterns::with_overrides(&[spec.to_string()]).expect_err("the override is rejected")
    };
    let unknown = err(r"los=loss ([\d.]+)");
    assert!(
        unknown.contains("unknown progress field `los`"),
        "{unknown}"
    );
    assert!(unknown.contains("did you mean `loss`?"), "{unknown}");
    let far = err(r"zzz=([\d.]+)");
    assert!(!far.contains("did you mean"), "{far}");
    assert!(far.contains("step_time"), "{far}");

    let invalid = err(r"loss=loss: ([\d.]+");
    assert!(
        invalid.contains("progress pattern `loss`: invalid regex"),
        "{invalid}"
    );
    assert!(invalid.contains("unclosed group"), "{invalid}");

    assert!(err("loss").contains("is not NAME=REGEX"));
    assert!(err("loss=").contains("empty regex"));
    assert!(err(r"step_time=took \d+s").contains("no capture group"));
}

#[test]
fn the_default_patterns_compile() {
    let patterns = ProgressPatterns::default();
    for field in ProgressField::ALL {
        assert!(patterns.is_default(field));
        let groups = patterns.regex(field).captures_len() - 1;
        assert_eq!(groups, if field.is_pair() { 2 } else { 1 }, "{field}");
        assert_eq!(ProgressField::from_name(field.name()), Some(field));
    }
}

#[test]
fn strip_ansi_handles_csi_and_osc_links() {
    assert_eq!(strip_ansi("plain"), Cow::Borrowed("plain"));
    assert_eq!(strip_ansi("\x1b[1;36mbold\x1b[0m"), "bold");
    assert_eq!(
        strip_ansi("\x1b]8;;https://x\x1b\\link\x1b]8;;\x07 after"),
        "link after"
    );
    // A lone escape at the end is dropped, not a panic.
    assert_eq!(strip_ansi("x\x1b"), "x");
}
