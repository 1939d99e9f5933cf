# Image of transcript-serve (serve-deployment.yaml). Build it from the repository root:
#   docker build -f deploy/k8s/serve.Dockerfile -t ghcr.io/transcriptstore/transcript-serve:0.1.0 .
# (tag each build with its release, as serve-deployment.yaml names it: never :latest)
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/transcript-serve ./cmd/transcript-serve

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/transcript-serve /transcript-serve
ENTRYPOINT ["/transcript-serve", "serve"]
