# Build a release binary in the Swift image, run it in slim Debian with libmicrohttpd.
FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libmicrohttpd-dev pkg-config zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product hlsorigin --static-swift-stdlib \
    && mkdir -p /out \
    && cp .build/release/hlsorigin /out/ \
    && cp -R .build/release/hlsorigin_TestSource.resources /out/

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libmicrohttpd12 zlib1g ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /var/lib/hlsorigin --create-home hlsorigin
WORKDIR /var/lib/hlsorigin
# The test source's fixtures are a resource bundle that must sit beside the binary.
COPY --from=build /out/ /usr/local/bin/
COPY config ./config
USER hlsorigin
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/hlsorigin"]
CMD ["--config", "config/default.yaml", "--data-dir", "/var/lib/hlsorigin/data"]
