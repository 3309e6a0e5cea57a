// Package deploy holds no code: it is the Dockerfile, compose file, systemd
// units, Kubernetes manifests, example configs and Grafana dashboards for
// running Tributary, and the tests that keep them true to the binary (every
// config key and flag they use exists, every unit verifies, the image's
// build command works, every metric a dashboard names is served).
package deploy
