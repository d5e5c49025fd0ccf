//! The reference's rendering test catalogue (ref-config-render §7.3 test_manifest.py,
//! cases 51-90, and §7.4 test_rayjob.py, cases 91-102), one test per case named after the
//! reference (`test_manifest::envelope::test_apiversion_and_kind`), plus the rendering
//! sharp edges of §8 (items 16-23). Fixtures are YAML validated by the real infra schema.

mod fixtures;
mod sharp_edges;
mod test_manifest;
mod test_rayjob;
