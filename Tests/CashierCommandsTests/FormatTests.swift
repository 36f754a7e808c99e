import Foundation
import Testing

@testable import CashierCommands

@Suite struct FormatTests {
    @Test(
        arguments: [
            (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1229, "1.2 KiB"), (5_242_880, "5.0 MiB"),
            (3 << 30, "3.0 GiB"),
        ] as [(Int, String)])
    func sizesAreHumanReadableInPowersOf1024(bytes: Int, text: String) {
        #expect(Format.size(bytes) == text)
    }

    @Test(
        arguments: [
            (0.4, "0s"), (59, "59s"), (60, "1m"), (3599, "59m"), (7200, "2h"), (86_399, "23h"), (3 * 86_400 + 5, "3d"),
            (-180, "-3m"),
        ] as [(Double, String)])
    func agesUseTheLargestWholeUnit(seconds: Double, text: String) {
        #expect(Format.duration(seconds) == text)
    }

    @Test func expiryReadsAsNeverFutureOrPast() {
        #expect(Format.expiry(nil, isLocked: false, now: 100) == "never")
        #expect(Format.expiry(700, isLocked: false, now: 100) == "in 10m")
        #expect(Format.expiry(40, isLocked: false, now: 100) == "1m ago")
        #expect(Format.expiry(40, isLocked: true, now: 100) == "never")
    }

    @Test func keysWithControlCharactersCannotBreakATableRow() {
        #expect(Format.escaped("a\nb\tc\u{1B}") == "a\\nb\\tc\\u{1b}")
        #expect(Format.escaped("clé 🔑") == "clé 🔑")
        #expect(Format.escaped("a\u{2028}b\u{2029}c") == "a\\u{2028}b\\u{2029}c")
    }

    @Test func tablesPadColumnsAndAlignNumbersRight() {
        let table = Format.table(
            ["A", "SIZE", "Z"], [["long", "1 B", "x"], ["s", "10 KiB", "y"]], rightAligned: [1])
        #expect(table == "A       SIZE  Z\nlong     1 B  x\ns     10 KiB  y")
    }

    @Test func hexDumpShowsOffsetsBytesAndPrintableText() {
        let dump = Format.hexDump(Data("Hello, Cashier!\n\u{0}A".utf8))
        #expect(
            dump == """
                00000000  48 65 6c 6c 6f 2c 20 43  61 73 68 69 65 72 21 0a  |Hello, Cashier!.|
                00000010  00 41                                             |.A|
                """)
    }

    @Test func shortTypeNamesDropStandardLibraryQualifiers() {
        #expect(Format.shortTypeName("Swift.Array<Swift.String>") == "Array<String>")
        #expect(Format.shortTypeName("FoundationEssentials.Data") == "Data")
        #expect(Format.shortTypeName("App.User") == "App.User")
    }
}
