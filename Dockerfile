# pg2iceberg as a small container image: a static binary on scratch, run as
# a non-root user. docker-compose.yml builds it; on its own:
#   docker build -t pg2iceberg .
#   docker run --rm pg2iceberg --help

# ---- build: the same command as scripts/build-static.sh run by hand
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN bash scripts/build-static.sh /out/pg2iceberg \
 && mkdir -p /out/tmp && chmod 1777 /out/tmp

# ---- run: nothing but the binary, CA certificates (S3 and REST catalogs
# over TLS) and a temp dir (the default --spool-dir). Zone data is compiled
# into the binary (time/tzdata).
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/tmp /tmp
COPY --from=build /out/pg2iceberg /usr/local/bin/pg2iceberg
# 65532 is the conventional "nonroot" uid/gid of distroless images. The
# bridge keeps no local state: the slot is in PostgreSQL, tables and key
# indexes in the warehouse, the catalog where --catalog says.
USER 65532:65532
# HOME: the AWS SDK looks for ~/.aws there (nothing is, in this image).
ENV TMPDIR=/tmp HOME=/tmp
# 8181: --serve-catalog (Iceberg REST), 9187: --metrics-addr.
EXPOSE 8181 9187
ENTRYPOINT ["/usr/local/bin/pg2iceberg"]
CMD ["--help"]
