import LiveTimeline
import Markers
import OriginCore
import OriginServer
import TestSupport
import Testing

@Suite("Configuration: cueTags and oatcls", .offThePool)
struct CueTagConfigurationTests {
    static func refusal(_ text: String) -> String? {
        do {
            _ = try ConfigurationFile.parse(text, source: "test.yaml")
            return nil
        } catch let error as ConfigurationError {
            return error.message
        } catch {
            return "unexpected error type: \(error)"
        }
    }

    @Test("cueTags is daterange unless set; legacyCueTags: true still means both; oatcls is off unless set")
    func modesAreRead() throws {
        let configuration = try ConfigurationFile.parse(
            """
            channels:
              - name: a
              - name: b
                cueTags: cue
                oatcls: true
              - name: c
                cueTags: both
              - name: d
                legacyCueTags: true
              - name: e
                legacyCueTags: false
            """)
        let channels = configuration.origin.channels
        #expect(channels.map(\.cueTags) == [.daterange, .cue, .both, .both, .daterange])
        #expect(channels.map(\.oatcls) == [false, true, false, false, false])
        #expect(channels[1].cueTagOptions == CueTagOptions(mode: .cue, oatcls: true))
    }

    @Test("an unknown mode, or cueTags together with legacyCueTags, is refused naming the channel")
    func badValuesAreRefused() throws {
        #expect(
            Self.refusal("channels:\n  - name: a\n    cueTags: scte\n")
                == "test.yaml: channel 'a': cueTags 'scte' is not one of daterange, cue, both")
        #expect(
            Self.refusal("channels:\n  - name: a\n    cueTags: cue\n    legacyCueTags: true\n")
                == "test.yaml: channel 'a': give cueTags or the older legacyCueTags (true = cueTags: both), not both")
    }
}
