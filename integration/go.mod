module github.com/switchboard-rpc/switchboard/integration

go 1.26.0

require go.uber.org/goleak v1.3.0

replace github.com/switchboard-rpc/switchboard => ../
