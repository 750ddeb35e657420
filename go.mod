module github.com/switchboard-rpc/switchboard

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	go.uber.org/zap v1.28.0
)

require (
	go.uber.org/goleak v1.3.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)
