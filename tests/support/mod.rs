pub mod fake_k8s;
