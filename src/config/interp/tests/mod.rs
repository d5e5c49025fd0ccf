//! Tests for interpolation; the OmegaConf corpus is in `golden`.

mod golden;
