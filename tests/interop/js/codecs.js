// Registers kafkajs' snappy, lz4 and zstd codecs (gzip is built in); required by produce.js and consume.js.
'use strict';
const { CompressionTypes, CompressionCodecs } = require('kafkajs');
CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy');
CompressionCodecs[CompressionTypes.LZ4] = new (require('kafkajs-lz4'))().codec;
// kafkajs' own zstd codec (@kafkajs/zstd) needs a native build; this is the same few lines over a prebuilt zstd.
const zstd = require('@mongodb-js/zstd');
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  compress: encoder => zstd.compress(encoder.buffer, 3),
  decompress: buffer => zstd.decompress(buffer),
});
