import Foundation
public import ServiceLifecycle

/// The SRT input is a `Service` of the process's group (`OriginService.services`), beside the origin: it accepts
/// callers on its own threads until a graceful shutdown or cancellation, then closes their sessions.
extension SRTListener: Service {
    public func run() async {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    let thread = Thread { [self] in
                        runBlocking()
                        done.resume()
                    }
                    thread.name = "srt listener"
                    thread.start()
                }
            } onGracefulShutdown: {
                self.stop()
            }
        } onCancel: {
            self.stop()
        }
    }
}
