import CashierPlatform
import Dispatch
import Observation

/// Makes a ``Cached`` property observable, although it must be `@ObservationIgnored`
/// inside an `@Observable` class: every read is reported to an `ObservationRegistrar`
/// (what `withObservationTracking`, and so SwiftUI, records), and every change to the
/// key made through a ``Cache`` of this process is reported as a mutation.
///
/// Subscribes to the folder's change hub at the first read, not at `init`: a property
/// only ever written costs no subscription (and every subscriber is visited by each
/// change). Mutations are reported on a queue of their own, never on the thread that
/// changed the key: that thread holds the key's lock, and an observer that read the
/// property there would wait for itself.
///
/// `Sendable`: the registrar is `Sendable` and immutable, the subscription lives behind
/// a `Locked`.
final class CachedObservation: Sendable {
    /// An `ObservationRegistrar` where Observation is available (always on Linux), else `nil`.
    private let registrar: (any Sendable)?
    private let subscription = Locked<(hub: ChangeHub, id: Int)?>(nil)

    init() {
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) {
            registrar = ObservationRegistrar()
        } else {
            registrar = nil
        }
    }

    deinit {
        if let subscription = subscription.withLock({ $0 }) { subscription.hub.unsubscribe(subscription.id) }
    }

    /// Reports a read of the property: observers of it learn of the key's next change.
    func access(_ name: String, in cache: Cache) {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *), let registrar = registrar as? ObservationRegistrar
        else { return }
        subscribe(name, cache.folderState.hub, registrar)
        registrar.access(self, keyPath: \.value)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    private func subscribe(_ name: String, _ hub: ChangeHub, _ registrar: ObservationRegistrar) {
        subscription.withLock { subscription in
            guard subscription == nil else { return }
            let id = hub.subscribe(name: name) { [weak self] _ in
                Self.queue.async { [weak self] in
                    guard let self else { return }
                    registrar.withMutation(of: self, keyPath: \.value) {}
                }
            }
            subscription = (hub, id)
        }
    }

    /// What observers track: the key's value, which lives in the cache.
    var value: Void { () }

    /// Where mutations are reported, in the order the changes were made.
    private static let queue = DispatchQueue(label: "Cashier.Cached.observation")
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension CachedObservation: Observable {}
