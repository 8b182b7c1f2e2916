package workload

import (
	"testing"

	"github.com/winnode/winnode/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
