# The image runs what scripts/test-package tests: the build stage makes the release binary (the Swift runtime linked
# statically) and the Debian package (scripts/package-deb); the runtime stage installs that package with apt, so the
# runtime dependencies are declared once, by the package (computed from the binary). scripts/check-dockerfile (run by
# scripts/test-package in CI) checks these package lists against Package.swift and the package's Depends.
#
#   docker build --build-arg VERSION=0.1.0 -t hlsorigin .
#   docker run -p 8080:8080 -v hlsorigin-data:/var/lib/hlsorigin hlsorigin
FROM swift:6.3-bookworm AS build
# What Package.swift's system libraries need (pkg-config libmicrohttpd, zlib, srt, libcrypto; gnutls for the TLS shim),
# and dpkg-dev, binutils and git for scripts/package-deb.
RUN apt-get update && apt-get install -y --no-install-recommends libmicrohttpd-dev libgnutls28-dev libssl-dev \
        libsrt-openssl-dev zlib1g-dev pkg-config dpkg-dev binutils git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift Package.resolved README.md ./
COPY Sources ./Sources
COPY Tests ./Tests
COPY config ./config
COPY docs ./docs
COPY packaging ./packaging
COPY scripts ./scripts
ARG VERSION=0.1.0
RUN swift build -c release --product hlsorigin --static-swift-stdlib \
    && scripts/package-deb --version "$VERSION" --output /out

FROM debian:bookworm-slim
COPY --from=build /out/ /tmp/hlsorigin-package/
RUN apt-get update && apt-get install -y --no-install-recommends /tmp/hlsorigin-package/hlsorigin_*.deb \
    && rm -rf /var/lib/apt/lists/* /tmp/hlsorigin-package
# The package's layout: /etc/hlsorigin/hlsorigin.yaml (the demo channel on :8080), data in /var/lib/hlsorigin, the
# hlsorigin user its postinst created.
USER hlsorigin
WORKDIR /var/lib/hlsorigin
VOLUME /var/lib/hlsorigin
EXPOSE 8080
ENTRYPOINT ["/usr/bin/hlsorigin"]
CMD ["--config", "/etc/hlsorigin/hlsorigin.yaml"]
