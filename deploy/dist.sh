#!/bin/sh
# dist.sh: release archives of the hub and the rpc client, the version
# stamped into the hub (hub version, /healthz). make dist runs it.
#
#   VERSION  the version (default: git describe, else "dev")
#   TARGETS  os/arch pairs (default: linux, darwin, windows on amd64 and arm64)
#   DIST     where the archives go (default: bin/dist)
#
# Each archive, switchboard-VERSION-OS-ARCH.tar.gz (.zip for windows),
# holds hub, rpc, README.md, LICENSE, hub.example.yaml and
# switchboard.service; SHA256SUMS lists them.
set -eu
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
TARGETS=${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
DIST=${DIST:-bin/dist}
mkdir -p "$DIST"
archives=
for target in $TARGETS; do
	os=${target%/*}
	arch=${target#*/}
	name=switchboard-$VERSION-$os-$arch
	dir=$DIST/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	ext=
	if [ "$os" = windows ]; then ext=.exe; fi
	for cmd in hub rpc; do
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath \
			-ldflags "-s -w -X main.version=$VERSION" -o "$dir/$cmd$ext" "./cmd/$cmd"
	done
	cp README.md LICENSE docs/hub.example.yaml deploy/switchboard.service "$dir/"
	if [ "$os" = windows ]; then
		archive=$name.zip
		(cd "$DIST" && rm -f "$archive" && zip -qr "$archive" "$name")
	else
		archive=$name.tar.gz
		(cd "$DIST" && tar -czf "$archive" "$name")
	fi
	rm -rf "$dir"
	archives="$archives $archive"
	echo "$DIST/$archive"
done
# shellcheck disable=SC2086 # the archives' names hold no spaces
(cd "$DIST" && sha256sum $archives > SHA256SUMS)
