import Cashier
import CashierPostgres
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

// A test server: GET and PUT of one model (`/items/:id`) through a Cashier cache, with a shared
// tier on PostgreSQL when `--postgres` names one, and `/stats` for what the harness counts.
//
//   FleetServer --port 8081 --schema 1 --folder /tmp/a --origin /tmp/origin
//               [--postgres postgres://user@127.0.0.1:5432/db] [--table fleet_entries]
//               [--origin-delay-ms 2] [--lifespan 3600] [--timeout 0.25]
//
// GET answers the cached item, fetching it from the origin on a miss; PUT (the body is the new
// version) writes the origin, then the cache, as an app that owns its data does.

let arguments = Arguments(CommandLine.arguments.dropFirst())
let port = arguments.int("port") ?? 8080
let schema = arguments.int("schema") ?? 1
let lifespan = Lifespan.seconds(Double(arguments.int("lifespan") ?? 3600))
let origin = try Origin(
    folder: URL(fileURLWithPath: arguments.string("origin") ?? "/tmp/fleet-origin"),
    delay: .milliseconds(arguments.int("origin-delay-ms") ?? 2))
let events = EventCounts()

var configuration = Cache.Configuration(name: "fleet")
configuration.location = .directory(URL(fileURLWithPath: arguments.string("folder") ?? "/tmp/fleet-\(port)"))
configuration.appVersion = "build-\(schema)"
configuration.sharedTierTimeout = arguments.double("timeout") ?? 0.25
configuration.onEvent = { events.note($0) }
let tier: PostgresSharedTier? = try await arguments.string("postgres").asyncMap { url in
    var options = PostgresSharedTier.Options()
    options.tableName = arguments.string("table") ?? "fleet_entries"
    options.retryDelay = .milliseconds(250)
    // The table is made on first use: prepare() would wait for the pool, which run() starts.
    // The tier's own account (its connection lost and back, with what the reconnection named) in
    // the server's log, with the failures.
    var logger = Logger(label: "fleet-tier") { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = .info
    return PostgresSharedTier(configuration: try postgresConfiguration(url), options: options, logger: logger)
}
let counting = tier.map(CountingTier.init)
configuration.sharedTier = counting
let cache = Cache(configuration)

let router = Router()
switch schema {
case 1: addItemRoutes(ItemV1.self, to: router)
case 2: addItemRoutes(ItemV2.self, to: router)
default: fatalError("--schema is 1 or 2")
}
router.get("/stats") { _, _ -> Response in
    let counts = counting?.snapshot ?? CountingTier.Counts()
    let stats = Stats(
        schema: schema, originFetches: origin.fetches, sharedReads: counts.reads, sharedStores: counts.stores,
        discards: events.discards, failures: events.failures)
    return try jsonResponse(stats)
}

var app = Application(
    router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port)),
    logger: Logger(label: "fleet-server"))
// The tier runs beside the server: it listens for other instances' changes and sweeps. At a
// graceful shutdown, services stop in the reverse of their order: the server first, then the
// cache sends what it queued for the tier, then the tier.
if let tier { app.addServices(tier, FinishingCache(cache: cache)) }
try await app.runService()

/// Sends the changes the cache queued for the shared tier once the server has stopped taking
/// requests, before the tier's service stops (without it they failed at exit, unsent).
struct FinishingCache: Service {
    let cache: Cache

    func run() async throws {
        // Cancelled rather than shut down gracefully: the changes are sent all the same.
        try? await gracefulShutdown()
        await cache.finishBackgroundWork()
    }
}

/// GET and PUT of `/items/:id` for one schema version of the model.
func addItemRoutes<M: Item>(_ type: M.Type, to router: Router<BasicRequestContext>) {
    router.get("/items/:id") { _, context -> Response in
        let id = try context.parameters.require("id", as: Int.self)
        let item = try await cache.value(for: M.key(id, lifespan: lifespan)) {
            M(id: id, version: try await origin.fetchVersion(of: id))
        }
        return try jsonResponse(Answer(schema: M.schemaVersion, item: item))
    }
    router.put("/items/:id") { request, context -> Response in
        let id = try context.parameters.require("id", as: Int.self)
        let body = try await request.body.collect(upTo: 64)
        guard
            let version = Int(
                String(decoding: body.readableBytesView, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw HTTPError(.badRequest, message: "the body is the new version, an integer")
        }
        try origin.write(version: version, of: id)
        let item = M(id: id, version: version)
        try cache.set(item, for: M.key(id, lifespan: lifespan))
        return try jsonResponse(Answer(schema: M.schemaVersion, item: item))
    }
}

struct Answer<M: Item>: Encodable {
    var schema: Int
    var item: M
}

struct Stats: Encodable {
    var schema: Int
    var originFetches: Int
    var sharedReads: Int
    /// Stores by slot ("name version").
    var sharedStores: [String: Int]
    var discards: [String: Int]
    var failures: Int
}

func jsonResponse(_ value: some Encodable) throws -> Response {
    let data = try JSONEncoder().encode(value)
    return Response(
        status: .ok, headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
}

/// Discards (by reason) and failures the cache reported: a decode failure is a discard.
final class EventCounts: Sendable {
    private let counts = Mutex<(discards: [String: Int], failures: Int)>(([:], 0))

    func note(_ event: CacheEvent) {
        switch event {
        case .discarded(_, let reason): counts.withLock { $0.discards["\(reason)", default: 0] += 1 }
        case .failure(_, let error):
            counts.withLock { $0.failures += 1 }
            // In the server's log, which the harness keeps beside its run.
            // With the time (seconds since 1970, to the millisecond), to line failures up with
            // the checker's writes and the outage's restart.
            let time = String(format: "%.3f", Date().timeIntervalSince1970)
            FileHandle.standardError.write(Data("\(time) failure: \(error)\n".utf8))
        default: break
        }
    }

    var discards: [String: Int] { counts.withLock { $0.discards } }
    var failures: Int { counts.withLock { $0.failures } }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}

/// `--name value` pairs.
struct Arguments {
    private var values: [String: String] = [:]

    init(_ arguments: ArraySlice<String>) {
        var iterator = arguments.makeIterator()
        while let name = iterator.next() {
            guard name.hasPrefix("--"), let value = iterator.next() else {
                fatalError("expected --name value: \(name)")
            }
            values[String(name.dropFirst(2))] = value
        }
    }

    func string(_ name: String) -> String? { values[name] }
    func int(_ name: String) -> Int? { number(name, Int.init) }
    func double(_ name: String) -> Double? { number(name, Double.init) }

    private func number<N>(_ name: String, _ parse: (String) -> N?) -> N? {
        guard let text = values[name] else { return nil }
        guard let number = parse(text) else { fatalError("--\(name) is a number: \(text)") }
        return number
    }
}

/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`, as the tests take it.
func postgresConfiguration(_ text: String) throws -> PostgresClient.Configuration {
    guard let url = URLComponents(string: text), let host = url.host, let user = url.user else {
        fatalError("--postgres is not postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE: \(text)")
    }
    let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
    return PostgresClient.Configuration(
        host: host, port: url.port ?? 5432, username: user, password: url.password,
        database: database.isEmpty ? nil : database, tls: .disable)
}
