package standin

import (
	"testing"

	"github.com/winnode/winnode/internal/testenv"
)

// TestMain stops the shared control plane after the tests.
func TestMain(m *testing.M) {
	testenv.Main(m)
}
