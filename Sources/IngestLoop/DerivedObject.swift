import Synchronization

/// One object derived on first use and kept as long as its owner lives (e.g. the prepared HTTP response of a
/// playlist version or of a segment), built at most once per owner in the common case and read without a lock.
///
/// Every caller of one `DerivedObject` must ask for the same type: a different type gets a fresh object that is not
/// kept.
public final class DerivedObject: Sendable {
    private final class Holder: Sendable {
        let object: any AnyObject & Sendable
        init(_ object: any AnyObject & Sendable) { self.object = object }
    }

    private let stored = AtomicLazyReference<Holder>()

    public init() {}

    /// The object stored here, made by `make` the first time. Two threads asking at once may both call `make`;
    /// one result is kept and returned to both.
    public func value<Object: AnyObject & Sendable>(_ make: () -> Object) -> Object {
        if let holder = stored.load() {
            return holder.object as? Object ?? make()
        }
        return stored.storeIfNil(Holder(make())).object as? Object ?? make()
    }
}
