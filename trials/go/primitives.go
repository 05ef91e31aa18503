// Package trials holds nothing of its own: it is a scratch module that requires Beam's Go SDK, so
// that `go test github.com/apache/beam/sdks/v2/go/test/integration/primitives` builds the SDK's own
// integration tests for the primitives at the version go.mod names.
package trials

import (
	_ "github.com/apache/beam/sdks/v2/go/test/integration/primitives"
)
