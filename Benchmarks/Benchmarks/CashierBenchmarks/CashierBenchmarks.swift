import Benchmark
import Cashier
import CashierWorkloads
import Foundation

// package-benchmark suite: every pair of CashierWorkloads (Cashier and its
// baseline side by side, time and allocations), plus 64 KiB blobs, PNG bytes
// through the typed facade, fetch-on-miss and 1–8 concurrent tasks.
//
//   swift package --package-path Benchmarks benchmark
//   CASHIER_BENCH_SMOKE=1 swift package --package-path Benchmarks benchmark   # small fixtures (CI)
let benchmarks: @Sendable () -> Void = {
    let smoke = ProcessInfo.processInfo.environment["CASHIER_BENCH_SMOKE"] != nil
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .syscalls, .throughput],
        maxDuration: .seconds(smoke ? 1 : 5),
        maxIterations: smoke ? 5 : 1_000)

    for (_, make) in Pairs.all {
        let pair = make(smoke ? .smoke : .full)
        // A reference pair's Cashier side is another pair's: only its baseline is new.
        let sides = pair.isReference ? [] : [("Cashier", pair.cashier)]
        for (label, workload) in sides + [("baseline: \(pair.baselineName)", pair.baseline)] {
            Benchmark("\(pair.name) — \(label)", configuration: .init(scalingFactor: .one)) { benchmark in
                // The fixtures stay alive through the pair.
                withExtendedLifetime(pair.fixtures) {
                    for _ in benchmark.scaledIterations {
                        benchmark.stopMeasurement()
                        workload.prepare()
                        benchmark.startMeasurement()
                        workload.run()
                    }
                }
            }
        }
    }

    let folder = Scratch("extras")
    let cache = Cache(folder.configuration(memoryCountLimit: 0))
    let blob = Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    let blobKey = CacheKey<Data>("blob")
    // Eight bytes of PNG signature and an IHDR chunk: what setImage(pngData:) checks.
    let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]) + blob

    Benchmark("64 KiB Data write") { benchmark in
        for _ in benchmark.scaledIterations { try? cache.set(blob, for: blobKey) }
    }
    Benchmark("64 KiB Data cold read") { benchmark in
        try? cache.set(blob, for: blobKey)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(cache.value(for: blobKey)) }
    }
    // Issue 16's allocation figure: bytes malloc'd per cold read of a 1 MiB value stored raw
    // (`mallocBytesCount` per iteration): the payload and header once, plus a constant.
    let megabyte = Pairs.sampleBlob(1 << 20)
    let megabyteKey = CacheKey<Data>("megabyte")
    Benchmark(
        "1 MiB Data cold read",
        configuration: .init(
            metrics: [.wallClock, .mallocCountTotal, .mallocBytesCount, .peakMemoryResidentDelta], scalingFactor: .one)
    ) { benchmark in
        try? cache.set(megabyte, for: megabyteKey)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(cache.value(for: megabyteKey)) }
    }
    Benchmark("facade: setImage(pngData:) + imageData(forKey:)") { benchmark in
        for _ in benchmark.scaledIterations {
            try? cache.setImage(pngData: png, forKey: "avatar")
            blackHole(cache.imageData(forKey: "avatar"))
        }
    }
    Benchmark("facade: setObject + object(forKey:as:)") { benchmark in
        for _ in benchmark.scaledIterations {
            try? cache.setObject(User.sample, forKey: "user")
            blackHole(cache.object(forKey: "user", as: User.self))
        }
    }
    Benchmark("fetch on a miss, then hits") { benchmark in
        for iteration in benchmark.scaledIterations {
            let key = CacheKey<User>("fetched-\(iteration)")
            for _ in 0..<4 { blackHole(try? await cache.value(for: key) { User.sample }) }
        }
    }
    for tasks in [1, 2, 4, 8] {
        Benchmark("\(tasks) concurrent tasks, 100 cold reads each") { benchmark in
            for index in 0..<100 { try? cache.set(User.sample, for: userKey(index)) }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                await withTaskGroup(of: Void.self) { group in
                    for task in 0..<tasks {
                        group.addTask {
                            for index in 0..<100 { blackHole(cache.value(for: userKey((index + task * 13) % 100))) }
                        }
                    }
                }
            }
        }
    }
    withExtendedLifetime(folder) {}
}
