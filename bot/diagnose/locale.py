"""What the C library prints for a killed process, a taken address and a segfault, in every language it ships.

A shell reports a child killed by SIGKILL with ``strsignal(SIGKILL)`` ("Killed"), and Python's ``OSError`` quotes
``strerror(EADDRINUSE)`` ("Address already in use"): both are translated by glibc for the host's locale, so a German
host prints "Getötet" and "Die Adresse wird bereits verwendet", a Chinese one "已杀死" and "地址已在使用". The
strings below were read from glibc's own message catalogues (``/usr/share/locale/*/LC_MESSAGES/libc.mo``, msgids
"Killed", "Address already in use", "Segmentation fault", "Cannot allocate memory",
"No space left on device", "Permission denied"), not guessed; English first.
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


#: strerror(ENOSPC) by locale (glibc libc.mo, msgid "No space left on device").
NO_SPACE_WORDS: tuple[str, ...] = (
    "No space left on device", "Няма месца на прыладзе", "Няма свободно място на устройството",
    "No resta espai al dispositiu", "Na zařízení není volné místo", "Ikke mere plads på enheden",
    "Auf dem Gerät ist kein Speicherplatz mehr verfügbar", "Δεν έμεινε καθόλου χώρος στη συσκευή",
    "Ne haviĝas plu da spaco sur aparato", "No queda espacio en el dispositivo", "Laitteella ei ole tilaa jäljellä",
    "Aucun espace disponible sur le périphérique", "Non hai espacio libre no dispositivo",
    "Nema više prostora na uređaju", "Nincs több hely a lemezen", "Tidak ruang lagi diperangkat",
    "Spazio esaurito sul device", "デバイスに空き領域がありません", "장치에 남은 공간이 없음", "Įrenginyje neliko vietos",
    "Ikke mer plass på enheten", "Geen ruimte meer over op apparaat", "Brak miejsca na urządzeniu",
    "Sem espaço livre no dispositivo", "Não há espaço disponível no dispositivo",
    "На устройстве не осталось свободного места", "Na zariadení už nie je žiadne miesto",
    "Na napravi ni več prostora", "Није преостало простора на уређају", "Enheten är full",
    "Aygıt üzerinde boş yer yok", "Недостатньо місця на пристрої", "Không có đủ chỗ trống trên thiết bị", "设备上没有空间",
    "裝置上已無多餘空間",
)


#: strerror(EACCES) by locale (glibc libc.mo, msgid "Permission denied").
PERMISSION_DENIED_WORDS: tuple[str, ...] = (
    "Permission denied", "бракуе правоў", "Отказан достъп", "S’ha denegat el permís", "Operace zamítnuta",
    "Adgang nægtet", "Keine Berechtigung", "Άρνηση πρόσβασης", "Mankas permeso", "Permiso denegado", "Lupa evätty",
    "Permission non accordée", "Pristup je odbijen", "Engedély megtagadva", "Ijin ditolak", "Permesso negato",
    "許可がありません", "허가 거부", "Ikke tilgang", "Toegang geweigerd", "Brak dostępu", "Permissão recusada",
    "Permissão negada", "Отказано в доступе", "Prístup odmietnutý", "Овлашћење је одбијено", "Åtkomst nekas",
    "Erişim engellendi", "Відмовлено у доступі", "Không đủ quyền truy cập", "权限不够", "拒絕不符權限的操作",
)


def alternation(words: tuple[str, ...]) -> str:
    """A regex alternation of literal words, longest first (so "Zabit (SIGKILL)" wins over "Zabit")."""
    return "(?:" + "|".join(re.escape(word) for word in sorted(set(words), key=len, reverse=True)) + ")"


KILLED = alternation(KILLED_WORDS)
ADDRESS_IN_USE = alternation(ADDRESS_IN_USE_WORDS)
SEGFAULT = alternation(SEGFAULT_WORDS)
NO_MEMORY = alternation(NO_MEMORY_WORDS)
NO_SPACE = alternation(NO_SPACE_WORDS)
PERMISSION_DENIED = alternation(PERMISSION_DENIED_WORDS)
