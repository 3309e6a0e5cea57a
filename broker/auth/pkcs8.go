package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// Encrypted PKCS#8 (RFC 5208 EncryptedPrivateKeyInfo) with PBES2 (RFC
// 8018): what openssl pkcs8 -topk8 and Kafka's PEM keystores with
// ssl.key.password use. Only PBKDF2 with AES-CBC is read; the legacy
// PBES1 schemes (DES, RC2) are refused by name.

type encryptedPrivateKeyInfo struct {
	Algo pkixAlgorithm
	Data []byte
}

type pkixAlgorithm struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type pbes2Params struct {
	KDF pkixAlgorithm
	Enc pkixAlgorithm
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int           `asn1:"optional"`
	PRF        pkixAlgorithm `asn1:"optional"`
}

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

// errKeyPassword is a wrong ssl.key.password (or a corrupt key): the
// padding does not check out.
var errKeyPassword = errors.New("ssl.key.password does not decrypt the private key")

func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("encrypted private key: %v", err)
	}
	if !info.Algo.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted private key uses %v; only PBES2 (openssl pkcs8 -topk8 -v2 aes-256-cbc) is supported", info.Algo.Algorithm)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(info.Algo.Parameters.FullBytes, &p); err != nil {
		return nil, fmt.Errorf("PBES2 parameters: %v", err)
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("PBES2 key derivation %v is not PBKDF2", p.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("PBKDF2 parameters: %v", err)
	}
	prf := sha1.New
	switch a := kdf.PRF.Algorithm; {
	case len(a) == 0 || a.Equal(oidHMACSHA1):
	case a.Equal(oidHMACSHA256):
		prf = sha256.New
	case a.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("PBKDF2 pseudo-random function %v is not HMAC-SHA1, -SHA256 or -SHA512", a)
	}
	var keyLen int
	switch a := p.Enc.Algorithm; {
	case a.Equal(oidAES128CBC):
		keyLen = 16
	case a.Equal(oidAES192CBC):
		keyLen = 24
	case a.Equal(oidAES256CBC):
		keyLen = 32
	default:
		return nil, fmt.Errorf("PBES2 cipher %v is not AES-CBC", a)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Enc.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, fmt.Errorf("AES-CBC parameters: not a 16-byte IV")
	}
	if kdf.Iterations < 1 || kdf.Iterations > 10_000_000 {
		return nil, fmt.Errorf("PBKDF2 iteration count %d is out of range", kdf.Iterations)
	}
	key, err := pbkdf2.Key(func() hash.Hash { return prf() }, string(password), kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	if len(info.Data) == 0 || len(info.Data)%aes.BlockSize != 0 {
		return nil, errKeyPassword
	}
	block, _ := aes.NewCipher(key)
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	pad := int(out[len(out)-1])
	if pad < 1 || pad > aes.BlockSize {
		return nil, errKeyPassword
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errKeyPassword
		}
	}
	out = out[:len(out)-pad]
	// A wrong password can still pad correctly by chance; the key must
	// then also parse.
	var probe asn1.RawValue
	if _, err := asn1.Unmarshal(out, &probe); err != nil {
		return nil, errKeyPassword
	}
	return out, nil
}
