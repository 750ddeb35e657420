package streams_test

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
)

func TestMain(m *testing.M) { hubproc.Main(m) }
