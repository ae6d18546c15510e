"""What the C library prints for a killed process, a taken address and a segfault, in every language it ships.

A shell reports a child killed by SIGKILL with ``strsignal(SIGKILL)`` ("Killed"), and Python's ``OSError`` quotes
``strerror(EADDRINUSE)`` ("Address already in use"): both are translated by glibc for the host's locale, so a German
host prints "Getötet" and "Die Adresse wird bereits verwendet", a Chinese one "已杀死" and "地址已在使用". The
strings below were read from glibc's own message catalogues (``/usr/share/locale/*/LC_MESSAGES/libc.mo``, msgids
"Killed", "Address already in use", "Segmentation fault", "Cannot allocate memory"), not guessed; English first.
"""

from __future__ import annotations

import re

#: strsignal(SIGKILL) by locale (glibc libc.mo, msgid "Killed").
KILLED_WORDS: tuple[str, ...] = (
    "Killed", "Забіты", "Безусловно прекъснат", "Matat", "Zabit (SIGKILL)", "Zabit", "Dræbt", "Getötet",
    "Σκοτώθηκε", "Buĉita", "Terminado (killed)", "Tapettu", "Processus arrêté", "Matado", "Ubijen", "Kilőve",
    "Terbunuh", "Ucciso", "強制終了", "죽었음", "Nutraukta (killed)", "Drept", "Geëlimineerd", "Unicestwiony", "Morto",
    "Убито", "Zabitý", "Pobit", "Убијен", "Dödad", "Süreç durduruldu", "Вбито", "Bị buộc kết thúc", "已杀死",
    "強制結束",
)

#: strerror(EADDRINUSE) by locale (glibc libc.mo, msgid "Address already in use").
ADDRESS_IN_USE_WORDS: tuple[str, ...] = (
    "Address already in use", "Адресът вече се използва", "L’adreça ja és en ús", "Adresa je užívána",
    "Adressen er allerede i brug", "Die Adresse wird bereits verwendet", "Η διεύθυνση υποδοχής είναι ήδη σε χρήση",
    "Adreso jam uziĝas", "La dirección ya se está usando", "Osoite on jo käytössä", "Adresse déjà utilisée",
    "Estase usando o enderezo", "Adrese se već koriste", "A cím már használatban van", "Alamat telah digunakan",
    "Indirizzo già in uso", "アドレスは既に使用中です", "주소가 이미 사용 중입니다", "Adresas jau naudojamas",
    "Adressen er allerede i bruk", "Adres is al in gebruik", "Adres jest już w użyciu", "Endereço já em uso",
    "Адрес уже используется", "Adresa je používaná", "Naslov je že v rabi", "Адреса је већ у употреби",
    "Adressen redan upptagen", "Adres zaten kullanımda", "Адресу вже використано", "Địa chỉ đang được dùng",
    "地址已在使用", "位址已經有在使用",
)

#: strsignal(SIGSEGV) by locale (glibc libc.mo, msgid "Segmentation fault").
SEGFAULT_WORDS: tuple[str, ...] = (
    "Segmentation fault", "Збой сэгмэнтацыі", "Violació de segment", "Segmentfejl", "Speicherzugriffsfehler",
    "Violación de segmento", "Muistialueen ylitys", "Erreur de segmentation", "Fallo de segmento",
    "Segmentacijska greška", "Szegmentálási hiba", "Errore di segmentazione", "세그멘테이션 오류", "Segmentavimo klaida",
    "Minnesegmentsfeil", "Segmentatiefout", "Naruszenie ochrony pamięci", "Falha de segmentação",
    "Ошибка сегментирования", "Chyba segmentácie", "Napaka segmentacije", "Segmenteringsfel", "Помилка адресування",
    "Lỗi phân đoạn", "段错误", "程式記憶體區段錯誤",
)


#: strerror(ENOMEM) by locale (glibc libc.mo, msgid "Cannot allocate memory").
NO_MEMORY_WORDS: tuple[str, ...] = (
    "Cannot allocate memory", "немагчыма разьмеркаваць памяць", "Не може да се задели памет",
    "No s’ha pogut reservar memòria", "Nelze alokovat paměť", "Kan ikke tildele hukommelse",
    "Nicht genügend Hauptspeicher verfügbar", "Δεν είναι δυνατό να δεσμευτεί μνήμη", "Mankas sufiĉa memoro",
    "No se pudo asignar memoria", "Muistin varaaminen ei onnistu", "Ne peut allouer de la mémoire",
    "Non se pode reservar memoria", "Nema dovoljno memorije", "Nem foglalható memória",
    "Tidak dapat mengalokasikan memori", "Impossibile allocare memoria", "メモリを確保できません",
    "메모리를 할당할 수 없습니다", "Nepavyko išskirti atminties", "Kan ikke tildele minne",
    "Onvoldoende geheugen beschikbaar", "Nie można przydzielić pamięci", "Impossível alocar memória",
    "Não foi possível alocar memória", "Невозможно выделить память", "Nie je možné prideliť pamäť",
    "Pomnilnika ni mogoče dodeliti", "Не могу да доделим меморију", "Kan inte allokera minne", "Bellek ayrılamadı",
    "Не вдалося розподілити пам’ять", "Không thể cấp phát bộ nhớ", "无法分配内存", "無法配置記憶體",
)


def alternation(words: tuple[str, ...]) -> str:
    """A regex alternation of literal words, longest first (so "Zabit (SIGKILL)" wins over "Zabit")."""
    return "(?:" + "|".join(re.escape(word) for word in sorted(set(words), key=len, reverse=True)) + ")"


KILLED = alternation(KILLED_WORDS)
ADDRESS_IN_USE = alternation(ADDRESS_IN_USE_WORDS)
SEGFAULT = alternation(SEGFAULT_WORDS)
NO_MEMORY = alternation(NO_MEMORY_WORDS)
