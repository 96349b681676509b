// franz-go's kmsg decoding kcodec's benchmark payloads (benchmarks/native/README.md).
//
//	anchor DIR ROUNDS        time every case: ROUNDS calls each (after one warm-up), JSON on stdout
//	anchor DIR once CASE     one warm-up call, then one call inside kcbMeasure (callgrind counts it)
//
// The record batch is read as franz-go's consumer reads one: the batch header (kmsg.RecordBatch), its
// CRC32C checked (kcodec and the Rust crate check it too), then every record (kmsg.Record).
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var cases = []string{"metadata_v12_1k", "metadata_v12_10k", "records_1k_none"}
var castagnoli = crc32.MakeTable(crc32.Castagnoli)
var sink int

func decodeRecords(data []byte) int {
	var b kmsg.RecordBatch
	if err := b.ReadFrom(data); err != nil {
		panic(err)
	}
	if crc32.Checksum(data[21:], castagnoli) != uint32(b.CRC) { // attributes to the end
		panic("crc")
	}
	in, n := b.Records, 0
	for i := int32(0); i < b.NumRecords; i++ {
		length, used := binary.Varint(in)
		if used <= 0 || length < 0 || int(length)+used > len(in) {
			panic("record length")
		}
		var r kmsg.Record
		if err := r.ReadFrom(in[:used+int(length)]); err != nil {
			panic(err)
		}
		n += len(r.Key) + len(r.Value)
		in = in[used+int(length):]
	}
	return n
}

func decode(c string, data []byte) int {
	if c == "records_1k_none" {
		return decodeRecords(data)
	}
	m := kmsg.NewPtrMetadataResponse()
	m.Version = 12
	if err := m.ReadFrom(data); err != nil {
		panic(err)
	}
	return len(m.Topics)
}

// kcbMeasure is the measured call: callgrind's --toggle-collect names it (main.kcbMeasure).
//
//go:noinline
func kcbMeasure(c string, data []byte) int { return decode(c, data) }

func load(dir, c string) []byte {
	data, err := os.ReadFile(filepath.Join(dir, c+".bin"))
	if err != nil {
		panic(err)
	}
	return data
}

func main() {
	dir := os.Args[1]
	if os.Args[2] == "once" {
		data := load(dir, os.Args[3])
		sink += decode(os.Args[3], data)
		fmt.Println(kcbMeasure(os.Args[3], data))
		return
	}
	rounds, err := strconv.Atoi(os.Args[2])
	if err != nil {
		panic(err)
	}
	out := map[string][]float64{}
	for _, c := range cases {
		data := load(dir, c)
		sink += decode(c, data)
		for i := 0; i < rounds; i++ {
			t := time.Now()
			sink += decode(c, data)
			out[c] = append(out[c], time.Since(t).Seconds())
		}
	}
	enc, _ := json.Marshal(out)
	fmt.Println(string(enc))
}
