// A stand-in for SwiftUI on Linux, where there is none: just the views, modifiers
// and property wrappers that README's and the articles' SwiftUI samples use,
// declared with the signatures of Apple's SDK (iOS 17 / macOS 14) where they
// matter to a caller: isolation (`View` is `@MainActor`), `Sendable` and
// `@isolated(any)` closures, result builders. .ci/doc-samples.sh compiles it as
// the module `SwiftUI` and type-checks the samples against it, with the same
// keys, models and caches as every other sample; nothing here ever runs.
//
// A sample that needs more of SwiftUI adds the declaration here, copied from
// Apple's documentation. (A primitive view's `body` says `return`, which keeps the result
// builder of `View.body` out of it.)

@MainActor @preconcurrency public protocol View {
    associatedtype Body: View
    @ViewBuilder @MainActor @preconcurrency var body: Body { get }
}

extension Never: View {
    public var body: Never { return fatalError() }
}

/// A type-erased view: what the stand-in's builder makes of any content.
public struct AnyView: View {
    public init<V: View>(_ view: V) {}
    public var body: Never { return fatalError() }
}

@resultBuilder public enum ViewBuilder {
    public static func buildExpression<V: View>(_ view: V) -> AnyView { AnyView(view) }
    public static func buildBlock(_ views: AnyView...) -> AnyView { views.first ?? AnyView(EmptyView()) }
    public static func buildOptional(_ view: AnyView?) -> AnyView { view ?? AnyView(EmptyView()) }
    public static func buildEither(first view: AnyView) -> AnyView { view }
    public static func buildEither(second view: AnyView) -> AnyView { view }
}

public struct EmptyView: View {
    public init() {}
    public var body: Never { return fatalError() }
}

public struct Text: View {
    public init<S: StringProtocol>(_ content: S) {}
    public var body: Never { return fatalError() }
}

public struct ButtonRole: Equatable, Sendable {
    public static let destructive = ButtonRole()
    public static let cancel = ButtonRole()
}

public struct Button<Label: View>: View {
    public var body: Never { return fatalError() }
}

extension Button where Label == Text {
    public init<S: StringProtocol>(_ title: S, role: ButtonRole? = nil, action: @escaping @MainActor () -> Void) {}
}

public struct Form<Content: View>: View {
    public init(@ViewBuilder content: () -> Content) {}
    public var body: Never { return fatalError() }
}

public struct List<Content: View>: View {
    public init<Data: RandomAccessCollection, ID: Hashable, RowContent: View>(
        _ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder rowContent: @escaping (Data.Element) -> RowContent
    ) where Content == AnyView {}
    public var body: Never { return fatalError() }
}

public struct LabeledContent: View {
    public init<S: StringProtocol>(_ title: S, value: String) {}
    public var body: Never { return fatalError() }
}

@propertyWrapper public struct State<Value>: DynamicProperty {
    public init(wrappedValue value: Value) {}
    public var wrappedValue: Value {
        get { fatalError() }
        nonmutating set {}
    }
}

public protocol DynamicProperty {}

extension View {
    public func task(
        priority: TaskPriority = .userInitiated,
        _ action: sending @escaping @isolated(any) () async -> Void
    ) -> some View { self }

    public func refreshable(action: @escaping @Sendable () async -> Void) -> some View { self }
}
