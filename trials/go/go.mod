module beamconformance/trials

go 1.26.0

require github.com/apache/beam/sdks/v2 v2.77.0

require (
	github.com/avast/retry-go/v4 v4.7.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/golang-cz/devslog v0.0.17 // indirect
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/exp v0.0.0-20260508232706-74f9aab9d74a // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260819154853-08b0e4226688 // indirect
	google.golang.org/grpc v1.83.2 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
