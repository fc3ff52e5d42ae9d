"""The audio custom ops AudioSpectrogram (Hann-windowed FFT magnitudes of float32 audio
[samples, channels]) and Mfcc (mel filterbank + DCT of a squared-magnitude spectrogram),
with their FlexBuffer options."""
import numpy as np
from flatbuffers import flexbuffers
from graph import Graph, rng_for
from make_op_cases import Case


def spectrogram(name, samples, channels, window, stride, squared, note=""):
    opts = flexbuffers.Dumps({"window_size": window, "stride": stride, "magnitude_squared": squared})
    fft = 1 << (window - 1).bit_length()
    rows = 0 if samples < window else 1 + (samples - window) // stride
    g = Graph()
    x = g.input("audio", "FLOAT32", [samples, channels])
    y = g.tensor("spectrogram", "FLOAT32", [channels, rows, fft // 2 + 1])
    g.custom_op("AudioSpectrogram", [x], [y], custom_options=opts)
    g.outputs([y])
    t = np.arange(samples, dtype=np.float64)[:, None]
    rng = rng_for(name)
    audio = (np.sin(2 * np.pi * t * (0.01 + 0.03 * np.arange(channels)) ) * 0.5
             + rng.uniform(-0.1, 0.1, (samples, channels))).astype(np.float32)
    return Case(name, g.finish(), [audio], note=note, ops=["AudioSpectrogram (custom)"])


def mfcc(name, frames, bins, rate, options, channels=1, constant_rate=True, note=""):
    opts = flexbuffers.Dumps(options)
    g = Graph()
    x = g.input("spectrogram", "FLOAT32", [channels, frames, bins])
    if constant_rate:
        r = g.const("sample_rate", "INT32", [], [rate])
    else:
        r = g.input("sample_rate", "INT32", [1])
    y = g.tensor("mfcc", "FLOAT32", [channels, frames, options.get("dct_coefficient_count", 0)])
    g.custom_op("Mfcc", [x, r], [y], custom_options=opts)
    g.outputs([y])
    rng = rng_for(name)
    spec = (rng.uniform(0, 3, (channels, frames, bins)) ** 2).astype(np.float32)
    inputs = [spec] if constant_rate else [spec, np.asarray([rate], np.int32)]
    return Case(name, g.finish(), inputs, note=note, ops=["Mfcc (custom)"])


def spectrogram_then_mfcc(name, samples, window, stride, rate, options):
    fft = 1 << (window - 1).bit_length()
    rows = 1 + (samples - window) // stride
    g = Graph()
    x = g.input("audio", "FLOAT32", [samples, 1])
    s = g.tensor("spectrogram", "FLOAT32", [1, rows, fft // 2 + 1])
    r = g.const("sample_rate", "INT32", [], [rate])
    y = g.tensor("mfcc", "FLOAT32", [1, rows, options["dct_coefficient_count"]])
    g.custom_op("AudioSpectrogram", [x], [s], custom_options=flexbuffers.Dumps(
        {"window_size": window, "stride": stride, "magnitude_squared": True}))
    g.custom_op("Mfcc", [s, r], [y], custom_options=flexbuffers.Dumps(options))
    g.outputs([y])
    audio = rng_for(name).uniform(-1, 1, (samples, 1)).astype(np.float32)
    return Case(name, g.finish(), [audio], note="a speech front end: spectrogram, then MFCC",
                ops=["AudioSpectrogram (custom)", "Mfcc (custom)"])


DEFAULT = {"upper_frequency_limit": 4000, "lower_frequency_limit": 20, "filterbank_channel_count": 40,
           "dct_coefficient_count": 13}


def cases():
    yield spectrogram("audio_spectrogram_squared", 1000, 1, 256, 128, True)
    yield spectrogram("audio_spectrogram_magnitude", 1000, 1, 200, 75, False,
                      note="a window that is not a power of two is zero-padded to 256")
    yield spectrogram("audio_spectrogram_two_channels", 512, 2, 128, 128, True,
                      note="nothing is left over between channels, so both give the same window count")
    yield spectrogram("audio_spectrogram_short", 100, 1, 256, 128, True, note="fewer samples than a window")
    yield mfcc("mfcc_default", 5, 257, 16000, DEFAULT)
    yield mfcc("mfcc_two_channels", 3, 129, 8000, {"upper_frequency_limit": 3800, "lower_frequency_limit": 100,
                                                     "filterbank_channel_count": 20, "dct_coefficient_count": 20},
               channels=2)
    yield mfcc("mfcc_rate_input", 4, 513, 22050, DEFAULT, constant_rate=False, note="the sample rate is an input")
    yield mfcc("mfcc_float_limits", 2, 257, 16000,
               {"upper_frequency_limit": 3999.9, "lower_frequency_limit": 20.7, "filterbank_channel_count": 30,
                "dct_coefficient_count": 12}, note="float limits are read as integers (truncated)")
    yield mfcc("mfcc_upper_past_last_bin", 2, 65, 8000,
               {"upper_frequency_limit": 5000, "lower_frequency_limit": 20, "filterbank_channel_count": 10,
                "dct_coefficient_count": 5}, note="an upper limit above Nyquist: the filterbank yields nothing, all 0")
    yield spectrogram_then_mfcc("audio_spectrogram_then_mfcc", 16000, 480, 160, 16000, DEFAULT)
