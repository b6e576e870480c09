import Foundation
import TestSupport
import Testing

/// The shipped nginx configurations (config/*.conf) must not split their caches by CMCD (CTA-5004): players send
/// a different `CMCD` query argument (buffer length, throughput, session id) with almost every request, so a key
/// holding the whole query (nginx's default `$scheme$proxy_host$request_uri`) would make every request a miss.
@Suite("nginx cache keys leave CMCD out", .offThePool)
struct NginxCacheKeyTests {
    static let configDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config")

    /// A block of an nginx configuration: its directives (name, arguments) and its blocks.
    final class Block {
        let header: String
        var directives: [(name: String, value: String)] = []
        var children: [Block] = []
        init(_ header: String) { self.header = header }
    }

    /// Parses `text` into blocks (comments dropped, quoted strings kept whole).
    static func parse(_ text: String) -> Block {
        let root = Block("")
        var stack = [root]
        var current = ""
        var quoted = false
        var comment = false
        for character in text {
            if comment {
                if character == "\n" { comment = false }
                continue
            }
            if character == "\"" { quoted.toggle() }
            if !quoted, character == "#" {
                comment = true
                continue
            }
            if !quoted, character == ";" || character == "{" || character == "}" {
                let statement = current.trimmingCharacters(in: .whitespacesAndNewlines)
                current = ""
                switch character {
                case ";":
                    let name = String(statement.prefix { !$0.isWhitespace })
                    let value = statement.dropFirst(name.count).trimmingCharacters(in: .whitespaces)
                    stack.last!.directives.append((name, value))
                case "{":
                    let block = Block(statement)
                    stack.last!.children.append(block)
                    stack.append(block)
                default:
                    stack.removeLast()
                }
                continue
            }
            current.append(character)
        }
        return root
    }

    /// Every location that proxies with a cache in force, with the cache key in force there (nil: nginx's default).
    static func cachedLocations(
        _ block: Block, cache: String?, key: String?, into found: inout [(location: String, key: String?)]
    ) {
        let cache = block.directives.last { $0.name == "proxy_cache" }?.value ?? cache
        let key = block.directives.last { $0.name == "proxy_cache_key" }?.value ?? key
        if let cache, cache != "off", block.directives.contains(where: { $0.name == "proxy_pass" }) {
            found.append((block.header, key))
        }
        for child in block.children { cachedLocations(child, cache: cache, key: key, into: &found) }
    }

    /// The variable names in `text` (`$uri|$arg_token` -> uri, arg_token).
    static func variables(_ text: String) -> Set<String> {
        var names = Set<String>()
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            rest = rest[rest.index(after: dollar)...]
            let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            names.insert(name.lowercased())
            rest = rest.dropFirst(name.count)
        }
        return names
    }

    @Test func everyCachedLocationHasAKeyWithoutTheQueryOrCMCD() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.configDirectory.path)
            .filter { $0.hasSuffix(".conf") }.sorted()
        #expect(files.count >= 3)
        var checked = 0
        for file in files {
            let text = try String(contentsOf: Self.configDirectory.appendingPathComponent(file), encoding: .utf8)
            var found: [(location: String, key: String?)] = []
            Self.cachedLocations(Self.parse(text), cache: nil, key: nil, into: &found)
            for (location, key) in found {
                checked += 1
                let key = try #require(key, "\(file) \(location): no proxy_cache_key (the default holds the query)")
                let variables = Self.variables(key)
                #expect(
                    variables.isDisjoint(with: ["request_uri", "args", "query_string", "is_args", "request"]),
                    "\(file) \(location): \(key)")
                #expect(!key.lowercased().contains("cmcd"), "\(file) \(location): \(key)")
            }
        }
        #expect(checked >= 8)
    }

    @Test func theCheckFindsADefaultOrAQueryKey() {
        var found: [(location: String, key: String?)] = []
        let text = """
            http { proxy_cache c; server { location / { proxy_pass http://a; }
              location /b/ { proxy_cache_key "$uri$is_args$args"; proxy_pass http://a; } } }
            """
        Self.cachedLocations(Self.parse(text), cache: nil, key: nil, into: &found)
        #expect(found.map(\.location) == ["location /", "location /b/"])
        #expect(found[0].key == nil)
        #expect(found[1].key.map(Self.variables) == ["uri", "is_args", "args"])
    }
}
