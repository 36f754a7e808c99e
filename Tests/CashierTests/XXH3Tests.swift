import CashierEntryFormat
import Testing

@testable import Cashier

/// XXH3-64, the checksum of format version 2, agrees bit for bit with the reference
/// implementation. The expected values are python-xxhash 4.1.0 (libxxhash 0.8):
/// `xxhash.xxh3_64_intdigest(bytes, seed=seed)` over `bytes[i] = (i * 31 + 7) & 0xFF`.
@Suite struct XXH3Tests {
    static let seeds: [UInt64] = [0, 1, 0x9E37_79B1_85EB_CA87]

    /// Every length class: 0, 1–3, 4–8, 9–16, 17–128, 129–240, and over 240 bytes through the
    /// stripe loop (one stripe, a block boundary, several blocks, 1 MiB plus a tail).
    static let vectors: [(length: Int, seed0: UInt64, seed1: UInt64, seedPrime: UInt64)] = [
        (0, 0x2D06_8005_38D3_94C2, 0x4DC5_B0CC_826F_6703, 0x07F7_0F81_9703_314D),
        (1, 0x4C5C_CA45_D0F4_811F, 0x0A18_7BF0_12EC_A100, 0x69F3_7FE5_02A5_CE84),
        (2, 0xA7E2_50C9_7710_FF27, 0x043D_F47A_1348_8E85, 0xC0EB_325B_987B_18D7),
        (3, 0x15F7_093B_173D_005C, 0x2D2F_08AD_1DCF_5855, 0xEEFF_2D8F_A402_9C4F),
        (4, 0xDCA0_12F9_5811_B6B9, 0x147B_A107_8A95_2951, 0xEB78_C192_9BDA_07C4),
        (5, 0xB290_CAFC_7B25_4345, 0xE7D1_024F_783F_D9C7, 0x3723_9F91_17E3_CD2B),
        (7, 0x7561_869C_23DA_3C1B, 0x9368_79A1_4843_3A5B, 0x36DD_9D00_FDD1_0A1D),
        (8, 0xDEC6_A9A4_3575_982E, 0x93DB_64E0_C78A_DDF0, 0x1DD0_6667_933E_E8F2),
        (9, 0xCBE3_9339_9F17_FFBD, 0x9B4A_C944_07EF_94F7, 0xCEEF_2CD3_978A_4903),
        (15, 0x545E_1999_0471_DC37, 0x8A5A_63B5_6A2B_5C05, 0xD36C_21CC_A257_DC73),
        (16, 0x7E48_4C18_D748_95D0, 0x5EB1_0BD4_6EBE_B101, 0x440D_0E06_E6EC_184F),
        (17, 0x208B_DE5E_E2BE_D407, 0x40EE_90E3_7FF5_7A2C, 0x86EC_712E_5819_BD3D),
        (31, 0xA937_652B_0119_CA11, 0x872C_B66E_A883_4617, 0x11E6_728D_180C_5C9D),
        (32, 0x03DF_0AC5_255D_1446, 0xB101_853D_FEAA_2516, 0xB370_7292_3531_4230),
        (33, 0x199A_3621_22D7_1F46, 0x59E3_EA85_3EC7_83EB, 0xD1AD_C516_7BFE_32E3),
        (63, 0x76D4_EEC1_F092_847F, 0x462E_0519_C177_4BF3, 0x9F37_E9F3_ADDD_423C),
        (64, 0xDD30_702A_B46B_3745, 0xA6C1_A8DF_0FFF_F23B, 0xE662_EE8E_D634_7E22),
        (65, 0xFAB3_6B85_1B94_CE20, 0xAAA8_C391_88E7_0F3A, 0xEE11_8073_C517_B4CA),
        (96, 0xD245_CD25_4158_2982, 0x7B7D_EC87_B161_842B, 0x4B7C_7C7D_674D_DD23),
        (97, 0x60E3_E1D0_D437_85B3, 0x3BA4_DC11_DECA_DB67, 0x5944_889E_3ACE_DAA8),
        (127, 0xA915_ED63_96DB_8CC0, 0x6A27_3C56_8A51_AF55, 0x35CF_CDF5_1DF7_F54C),
        (128, 0xF92B_70EA_A21A_6288, 0x6673_C681_4E93_5B97, 0x1BF6_27F1_48EE_2125),
        (129, 0xF8F7_6713_F2BB_60FA, 0x9638_1662_9258_6E74, 0xD8F2_A276_BB81_2AE7),
        (130, 0x303A_2C38_23C3_C34A, 0xE42B_3A24_D1C1_068C, 0xDC46_62CF_B520_1687),
        (143, 0xC372_F52C_2715_6971, 0x4ACF_F864_C994_529A, 0x06F2_D42C_E792_9E23),
        (144, 0xD87F_0076_5EE3_D89E, 0x0234_026A_045D_6F87, 0x52A2_4787_A8D0_048A),
        (239, 0xCAA9_B7A5_8846_4745, 0x0586_C342_56F0_CF0C, 0xCAED_A91F_C0F3_AE7E),
        (240, 0xCCC7_3751_72C4_1F03, 0x8B1F_DBBE_81E5_919E, 0x0D25_758D_E6BB_A3F4),
        (241, 0x0B3B_6309_48CE_4A00, 0x7443_5D0E_D97C_22F9, 0x6995_4910_E268_D78E),
        (255, 0x8993_2170_686C_DD9A, 0xD0A5_17BF_F918_3F43, 0xE89B_BA8D_7848_E535),
        (256, 0xEC85_B75B_AFE6_CA74, 0xF449_472B_C405_D7D3, 0xCE9E_BAA6_813E_4A42),
        (257, 0x12EF_0FF6_3384_1459, 0x77D0_2B73_6D05_09F0, 0xCB1A_EFCA_1CA8_0AA9),
        (1023, 0xF0D3_30CE_2B33_00FB, 0x135F_F09A_58FD_E173, 0xC6AD_167A_DE25_5873),
        (1024, 0x23BC_880E_BF0D_29C6, 0xB5BF_4CCC_6942_B02D, 0x214F_BE80_28E7_730A),
        (1025, 0xC09F_DFBC_398C_7D82, 0xC92B_7079_1F0E_3D05, 0x71B3_D105_85F2_07AA),
        (1087, 0x3AB6_ED4B_5BE0_6FCC, 0x1A1B_C001_FFAC_671D, 0xD055_FB49_F72D_34A5),
        (1088, 0xA16B_AD67_843C_5A45, 0xA018_3ADA_C4EB_9260, 0x20DA_FE09_78CA_6F1A),
        (2048, 0x19F6_F9C9_8733_1373, 0x2571_C511_4961_1399, 0x59E0_4018_5799_9FF7),
        (65536, 0xCF18_8822_0487_98B0, 0x87AF_BC2F_A21C_0A57, 0x8131_C902_AB64_982F),
        (1_048_583, 0xE530_6223_E2CB_11E2, 0xA7AF_32EB_8BDF_8D52, 0xBD8A_4254_C097_3522),
    ]

    static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) } }

    @Test func knownStringsHashAsTheReference() {
        #expect([UInt8]().withUnsafeBytes { XXH3.hash($0) } == 0x2D06_8005_38D3_94C2)
        #expect(Array("abc".utf8).withUnsafeBytes { XXH3.hash($0) } == 0x78AF_5F94_892F_3950)
    }

    @Test(arguments: vectors.map(\.length))
    func everyLengthClassMatchesTheReference(length: Int) {
        let vector = Self.vectors.first { $0.length == length }!
        let bytes = Self.pattern(length)
        for (seed, expected) in zip(Self.seeds, [vector.seed0, vector.seed1, vector.seedPrime]) {
            #expect(bytes.withUnsafeBytes { XXH3.hash($0, seed: seed) } == expected, "length \(length) seed \(seed)")
        }
    }

    /// Big-endian targets take the scalar stripe loop: it must give what the vector loop gives.
    @Test(arguments: vectors.map(\.length).filter { $0 > 240 })
    func scalarLoopMatchesTheVectorLoop(length: Int) {
        let vector = Self.vectors.first { $0.length == length }!
        let bytes = Self.pattern(length)
        for (seed, expected) in zip(Self.seeds, [vector.seed0, vector.seed1, vector.seedPrime]) {
            #expect(
                bytes.withUnsafeBytes { XXH3.hashScalar($0, seed: seed) } == expected, "length \(length) seed \(seed)")
        }
    }

    /// The hash reads only the buffer it is given: the same bytes at any alignment hash alike.
    @Test func alignmentDoesNotChangeTheHash() {
        let bytes = Self.pattern(4096 + 8)
        let expected = bytes.withUnsafeBytes { XXH3.hash(UnsafeRawBufferPointer(rebasing: $0[0..<4096]), seed: 7) }
        for shift in 1...7 {
            let shifted = [UInt8](repeating: 0, count: shift) + bytes[0..<4096]
            #expect(
                shifted.withUnsafeBytes { XXH3.hash(UnsafeRawBufferPointer(rebasing: $0[shift...]), seed: 7) }
                    == expected)
        }
    }
}
