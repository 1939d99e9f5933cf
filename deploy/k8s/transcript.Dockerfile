# Image of the transcript command (transcript follow, restore, verify, ...), used by
# deploy/k8s/follow-sidecar.yaml. Build it from the repository root:
#   docker build -f deploy/k8s/transcript.Dockerfile -t ghcr.io/transcriptstore/transcript:0.1.0 .
# (tag each build with its release, as the manifests name it: never :latest)
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/transcript ./cmd/transcript

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/transcript /transcript
ENTRYPOINT ["/transcript"]
