// Package deploy holds what a deployment of the hub starts from, and the
// tests that check it: switchboard.service (a systemd unit), Dockerfile
// (a container image) and dist.sh (the release archives of make dist).
// docs/deploy.md describes them. There is no Go API here.
package deploy
