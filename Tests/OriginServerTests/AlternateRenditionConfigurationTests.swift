import LiveTimeline
import OriginCore
import OriginServer
import TestSupport
import Testing

/// `audio:`/`subtitles:` on renditions, `audioOnlyVariant` and `followerWaitMilliseconds` on channels and
/// `ingest.defaults`, checked at load with the rules an encoder's hint is checked with.
@Suite("Configuration of alternate renditions", .offThePool)
struct AlternateRenditionConfigurationTests {
    static let demux = """
        channels:
          - name: demux
            renditions:
              - { name: hi }
              - { name: lo }
              - { name: en, audio: { group: aud, language: en, name: English, default: true } }
              - { name: fr, audio: { group: aud, language: fr, name: Français } }
              - name: lo-vtt
                subtitles: { group: subs, language: en, name: English, parent: lo, forced: true, timestampOffset: 126000 }
            audioOnlyVariant: true
            followerWaitMilliseconds: 1000
        ingest:
          defaults:
            audioOnlyVariant: true
            followerWaitMilliseconds: 500
        """

    @Test func groupsAndChannelSwitchesAreRead() throws {
        let configuration = try ConfigurationFile.parse(Self.demux, source: "test.yaml")
        let channel = try #require(configuration.origin.channels.first)
        #expect(channel.renditions.map(\.name) == ["hi", "lo", "en", "fr", "lo-vtt"])
        #expect(channel.renditions[0].audio == nil && channel.renditions[0].subtitles == nil)
        #expect(
            channel.renditions[2].audio
                == MediaGroupMembership(group: "aud", language: "en", name: "English", isDefault: true))
        #expect(channel.renditions[3].audio == MediaGroupMembership(group: "aud", language: "fr", name: "Français"))
        #expect(
            channel.renditions[4].subtitles
                == MediaGroupMembership(
                    group: "subs", language: "en", name: "English", forced: true, parent: "lo",
                    timestampOffset: 126_000))
        #expect(channel.audioOnlyVariant)
        #expect(channel.followerWaitMilliseconds == 1000)
        #expect(configuration.origin.ingest.autoCreatedChannel.audioOnlyVariant)
        #expect(configuration.origin.ingest.autoCreatedChannel.followerWaitMilliseconds == 500)
    }

    @Test func withoutTheKeysNothingChanges() throws {
        let configuration = try ConfigurationFile.parse("channels:\n  - name: ch\n    renditions: [{ name: a }]\n")
        let channel = try #require(configuration.origin.channels.first)
        #expect(!channel.audioOnlyVariant)
        #expect(channel.followerWaitMilliseconds == nil)
        #expect(channel.renditions[0].audio == nil)
    }

    static func refusal(_ renditions: String, extra: String = "") -> String? {
        let text = "channels:\n  - name: demux\n    renditions:\n" + renditions + extra
        do {
            _ = try ConfigurationFile.parse(text, source: "test.yaml")
            return nil
        } catch let error as ConfigurationError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test(
        "refused at load with the reason",
        arguments: [
            (
                "      - { name: en, audio: { group: aud, name: Same } }\n"
                    + "      - { name: fr, audio: { group: aud, name: Same } }\n",
                "channel 'demux': NAME \"Same\" appears twice in GROUP-ID \"aud\""
            ),
            (
                "      - { name: en, audio: { group: aud, default: true } }\n"
                    + "      - { name: fr, audio: { group: aud, default: true } }\n",
                "channel 'demux': two DEFAULT=YES in GROUP-ID \"aud\""
            ),
            (
                "      - { name: en, audio: { group: aud, language: english! } }\n",
                "channel 'demux': LANGUAGE \"english!\" of en is not an RFC 5646 tag"
            ),
            (
                "      - { name: en-vtt, subtitles: { group: subs, parent: en } }\n",
                "channel 'demux': rendition 'en-vtt': parent 'en' is not another rendition"
            ),
            (
                "      - { name: en, audio: { group: a }, subtitles: { group: s } }\n",
                "channel 'demux': rendition 'en' is audio or subtitles, not both"
            ),
            (
                "      - { name: en, audio: { group: x } }\n      - { name: s, subtitles: { group: x } }\n",
                "channel 'demux': GROUP-ID \"x\" is used for audio and subtitles"
            ),
            (
                "      - { name: en, audio: { group: aud, lang: en } }\n",
                "unknown key 'lang'"
            ),
            (
                "      - { name: en, audio: { language: en } }\n",
                "missing key"
            ),
        ])
    func badGroupsAreRefused(renditions: String, message: String) {
        let refusal = Self.refusal(renditions)
        #expect(refusal?.contains(message) == true, "\(refusal ?? "accepted")")
    }

    @Test func negativeFollowerWaitIsRefused() {
        let refusal = Self.refusal("      - { name: a }\n", extra: "    followerWaitMilliseconds: -1\n")
        #expect(refusal == "test.yaml: channel 'demux': followerWaitMilliseconds must be >= 0")
    }
}
