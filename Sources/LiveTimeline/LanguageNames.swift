/// The own names (endonyms) of common languages, for the NAME of an audio or subtitle rendition whose encoder gave
/// only a generated one.
enum LanguageNames {
    /// The language's own name for an RFC 5646 tag (by its primary subtag, case-insensitive); nil when unknown.
    static func endonym(_ tag: String) -> String? {
        let primary = tag.split(separator: "-").first.map { $0.lowercased() } ?? ""
        return table[primary]
    }

    static let table: [String: String] = [
        "ar": "العربية", "bg": "Български", "bn": "বাংলা", "ca": "Català", "cs": "Čeština", "cy": "Cymraeg",
        "da": "Dansk", "de": "Deutsch", "el": "Ελληνικά", "en": "English", "es": "Español", "et": "Eesti",
        "eu": "Euskara", "fa": "فارسی", "fi": "Suomi", "fr": "Français", "ga": "Gaeilge", "gl": "Galego",
        "he": "עברית", "hi": "हिन्दी", "hr": "Hrvatski", "hu": "Magyar", "id": "Bahasa Indonesia", "is": "Íslenska",
        "it": "Italiano", "ja": "日本語", "ko": "한국어", "lt": "Lietuvių", "lv": "Latviešu", "ms": "Bahasa Melayu",
        "nb": "Norsk bokmål", "nl": "Nederlands", "nn": "Norsk nynorsk", "no": "Norsk", "pl": "Polski",
        "pt": "Português", "ro": "Română", "ru": "Русский", "sk": "Slovenčina", "sl": "Slovenščina", "sr": "Српски",
        "sv": "Svenska", "sw": "Kiswahili", "ta": "தமிழ்", "th": "ไทย", "tr": "Türkçe", "uk": "Українська",
        "ur": "اردو", "vi": "Tiếng Việt", "zh": "中文",
    ]
}
