//! The schema's enumerated fields. Each variant carries the exact YAML spelling; matching
//! is exact and case-sensitive, like the reference (`Kai` and ` kai ` are rejected).

use std::fmt;

pub use crate::config::typed::StrEnum;

macro_rules! str_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl StrEnum for $name {
            const VALUES: &'static [&'static str] = &[$($text),+];

            fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text ),+
                }
            }

            fn parse(s: &str) -> Option<Self> {
                match s {
                    $( $text => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl $name {
            /// The YAML spelling.
            pub fn as_str(self) -> &'static str {
                <Self as StrEnum>::as_str(self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl crate::config::typed::json_schema::Describe for $name {
            fn describe(_: &mut crate::config::typed::json_schema::SchemaCx) -> serde_json::Value {
                crate::config::typed::json_schema::enum_schema::<$name>()
            }
        }

        impl super::dump::Dump for $name {
            fn dump(&self) -> crate::config::node::Node {
                crate::config::node::Node::str(self.as_str())
            }
        }
    };
}

str_enum! {
    /// `scheduler.kind`.
    pub enum SchedulerKind { Kai = "kai", Kueue = "kueue", Default = "default" }
}

str_enum! {
    /// `placement.tolerations[].operator`.
    pub enum TolerationOperator { Equal = "Equal", Exists = "Exists" }
}

str_enum! {
    /// `placement.tolerations[].effect`.
    pub enum TolerationEffect {
        NoSchedule = "NoSchedule",
        PreferNoSchedule = "PreferNoSchedule",
        NoExecute = "NoExecute",
    }
}

str_enum! {
    /// `networking.nccl_net`.
    pub enum NcclNet { Socket = "Socket", Ib = "IB", Ofi = "OFI" }
}

str_enum! {
    /// `workspace.kind`.
    pub enum WorkspaceKind {
        Lustre = "lustre",
        Pvc = "pvc",
        HostPath = "hostPath",
        RayUpload = "rayUpload",
        Auto = "auto",
    }
}

str_enum! {
    /// `hf_cache.kind`.
    pub enum HFCacheKind { Lustre = "lustre", Pvc = "pvc", EmptyDir = "emptyDir", None = "none" }
}

str_enum! {
    /// `checkpoints.kind`.
    pub enum CheckpointsKind { Lustre = "lustre", Pvc = "pvc", None = "none" }
}

str_enum! {
    /// `submit.kind` (validated, unused).
    pub enum SubmitKind { Sdk = "sdk", Rayjob = "rayjob" }
}

str_enum! {
    /// `submit.portForward` (validated, unused).
    pub enum PortForwardMode {
        KubectlRayPlugin = "kubectl-ray-plugin",
        KubectlPortForward = "kubectl-port-forward",
        Auto = "auto",
    }
}

str_enum! {
    /// `submit.devPod` (validated, unused).
    pub enum DevPodMode { Auto = "auto", Required = "required", Skip = "skip" }
}

str_enum! {
    /// `submit.submitter`: how `--raycluster` runs reach the head.
    pub enum SubmitterMode { PortForward = "portForward", Exec = "exec" }
}

str_enum! {
    /// `launch.mode` (informational).
    pub enum LaunchMode { Single = "single", Rayjob = "rayjob", Attach = "attach", Bringup = "bringup" }
}

str_enum! {
    /// `launch.runMode`.
    pub enum RunMode { Interactive = "interactive", Batch = "batch" }
}

str_enum! {
    /// `launch.codeSource`: where the training code comes from.
    pub enum CodeSource { Upload = "upload", Image = "image", Lustre = "lustre" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_is_exact_and_round_trips() {
        assert_eq!(SchedulerKind::parse("kai"), Some(SchedulerKind::Kai));
        assert_eq!(SchedulerKind::parse("Kai"), None);
        assert_eq!(SchedulerKind::parse(" kai "), None);
        assert_eq!(NcclNet::parse("IB"), Some(NcclNet::Ib));
        for v in PortForwardMode::VALUES {
            assert_eq!(PortForwardMode::parse(v).map(|m| m.as_str()), Some(*v));
        }
        assert_eq!(WorkspaceKind::HostPath.to_string(), "hostPath");
    }
}
