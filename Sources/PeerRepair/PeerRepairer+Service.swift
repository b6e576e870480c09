public import ServiceLifecycle

/// Peer repair is an input of its own in the process's `ServiceGroup` (`OriginService.services`), beside the origin.
extension PeerRepairer: Service {
    /// Runs the repair and agreement loops (`run(interval:agreementInterval:)`) until a graceful shutdown or
    /// cancellation; the group stops it before the origin drains.
    public func run() async {
        await cancelWhenGracefulShutdown {
            await self.run(interval: .milliseconds(100), agreementInterval: .seconds(2))
        }
    }
}
