import Cashier
import Foundation
import Hummingbird

// The server of run.sh: items of a catalogue, each a JSON file in an origin folder, served two
// ways on one port.
//
//   ServerBench --port 8090 --folder /tmp/server-bench-cache --origin /tmp/server-bench-origin
//               [--items 20000] [--memory 2000]
//
// GET /plain/:id reads the item's file and decodes it, as an app without a cache would; PUT
// /plain/:id (the body is a new title) writes the file. GET /cached/:id reads through
// `Cache.value(for:fetch:)` (memory tier of `--memory` entries, disk tier in `--folder`), fetching
// from the origin on a miss; PUT /cached/:id writes the origin, then the cache. GET /cpu answers
// the process's CPU time so far, in microseconds (user + system), for the CPU a request costs.

let options = Options(CommandLine.arguments.dropFirst())
let items = options.int("items") ?? 20_000
let origin = try Origin(folder: URL(fileURLWithPath: options.string("origin") ?? "/tmp/server-bench-origin"))
try origin.fill(items)

var configuration = Cache.Configuration(name: "server-bench")
configuration.location = .directory(URL(fileURLWithPath: options.string("folder") ?? "/tmp/server-bench-cache"))
configuration.memoryCountLimit = options.int("memory") ?? 2_000
let cache = Cache(configuration)

func key(_ id: Int) -> CacheKey<Item> { CacheKey("item-\(id)", schemaVersion: 1, lifespan: .hours(1)) }

func itemID(_ context: some RequestContext) throws -> Int {
    guard let id = context.parameters.get("id", as: Int.self), (0..<items).contains(id) else {
        throw HTTPError(.notFound)
    }
    return id
}

func title(of request: Request) async throws -> String {
    String(buffer: try await request.body.collect(upTo: 4096))
}

let encoder = JSONEncoder()
func response(_ item: Item) throws -> Response {
    Response(
        status: .ok, headers: [.contentType: "application/json"],
        body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(item))))
}

let router = Router()
router.get("plain/:id") { _, context in try response(try origin.read(try itemID(context))) }
router.put("plain/:id") { request, context -> HTTPResponse.Status in
    let id = try itemID(context)
    try origin.write(Item(id: id, title: try await title(of: request)))
    return .noContent
}
router.get("cached/:id") { _, context in
    let id = try itemID(context)
    return try response(try await cache.value(for: key(id)) { try origin.read(id) })
}
router.put("cached/:id") { request, context -> HTTPResponse.Status in
    let id = try itemID(context)
    let item = Item(id: id, title: try await title(of: request))
    try origin.write(item)
    try cache.set(item, for: key(id))
    return .noContent
}
router.get("cpu") { _, _ in String(cpuMicroseconds()) }

let app = Application(
    router: router, configuration: .init(address: .hostname("127.0.0.1", port: options.int("port") ?? 8090)))
try await app.runService()

/// User and system CPU time of this process so far, in microseconds.
func cpuMicroseconds() -> Int {
    var usage = rusage()
    #if os(Linux)
    getrusage(RUSAGE_SELF.rawValue, &usage) // Glibc's sys/resource.h: an enum
    #else
    getrusage(RUSAGE_SELF, &usage) // Darwin's sys/resource.h: an int
    #endif
    let seconds = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec
    return Int(seconds) * 1_000_000 + Int(usage.ru_utime.tv_usec) + Int(usage.ru_stime.tv_usec)
}
